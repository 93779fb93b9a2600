"""example_metrics.adapter — the example output's settings and sink: emit
takes a stable snapshot into a bounded queue and returns; a delivery thread
writes batches to the endpoint (file:// endpoints: one JSON line per event,
"{pid}" replaced by the process id); drops and errors are logged at most
once per interval; close stops intake and drains within its timeout."""
import collections
import json
import logging
import os
import threading
import time
import urllib.parse

from tokenspeed.runtime.metrics.events import MetricEvent  # noqa: F401 (the type emit receives)

log = logging.getLogger("example_metrics")
SETTINGS = {  # key: (type, default, description)
    "endpoint": (str, None, "where events are delivered (https:// or file://)"),
    "queue_size": (int, 10000, "events held before new ones are dropped"),
}
LOG_INTERVAL_S = 10.0


def validate_config(config):
    unknown = sorted(set(config) - set(SETTINGS))
    if unknown:
        raise ValueError(f"unsupported setting {unknown[0]!r}")
    normalized = {}
    for key, (kind, default, _) in SETTINGS.items():
        value = config.get(key, default)
        if value is None:
            raise ValueError(f"{key!r} is required")
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ValueError(f"{key!r} must be a {kind.__name__}")
        normalized[key] = value
    if normalized["queue_size"] < 1:
        raise ValueError("'queue_size' must be at least 1")
    scheme = urllib.parse.urlparse(normalized["endpoint"]).scheme
    if scheme not in ("https", "file"):
        raise ValueError("'endpoint' must be an https:// or file:// URL")
    return normalized


class ExampleSink:
    def __init__(self, endpoint, queue_size):
        self._path = urllib.parse.urlparse(endpoint).path.replace("{pid}", str(os.getpid()))
        self._queue = collections.deque()
        self._limit = queue_size
        self._ready = threading.Condition()
        self._closing = False
        self._dropped = 0
        self._last_log = 0.0
        self._thread = threading.Thread(target=self._deliver, name="example_metrics", daemon=True)
        self._thread.start()

    def emit(self, event):
        record = (event.timestamp_ns, event.metric, event.operation, event.value,
                  dict(event.labels), event.weight)
        with self._ready:
            if self._closing:
                return
            if len(self._queue) >= self._limit:
                self._dropped += 1
                self._complain()
                return
            self._queue.append(record)
            if len(self._queue) == 1:
                self._ready.notify()

    def _complain(self):
        now = time.monotonic()
        if now - self._last_log >= LOG_INTERVAL_S:
            log.warning("example_output dropped %d events (queue full)", self._dropped)
            self._last_log = now

    def _deliver(self):
        with open(self._path, "a") as out:
            while True:
                with self._ready:
                    while not self._queue and not self._closing:
                        self._ready.wait()
                    batch = list(self._queue)
                    self._queue.clear()
                    done = self._closing
                for ts, metric, operation, value, labels, weight in batch:
                    out.write(json.dumps({"timestamp_ns": ts, "metric": metric,
                                          "operation": operation, "value": value,
                                          "labels": labels, "weight": weight}) + "\n")
                out.flush()
                if done:
                    return

    def close(self, timeout):
        with self._ready:
            self._closing = True
            self._ready.notify()
        self._thread.join(timeout)


def create_sink(producer_config):
    return ExampleSink(producer_config["endpoint"], producer_config["queue_size"])
