"""otlp_common.py — what the otlp tests share: the Node OTLP receiver
(test/otlp_receiver, official decoders), one `simulate` run with its output,
the Prometheus scrape, and the comparison of decoded OTLP data points with
/metrics. Starts only processes it stops again; binds 127.0.0.1 only.

Environment (set by test/integration/meson.build):
  TSM_BINARY         the tokenspeed-metrics executable
  TSM_OTLP_DIR       the build folder holding otlp.so
  TSM_OTLP_RECEIVER  test/otlp_receiver/receiver.js (its node_modules beside it)
  TSM_NODE           the node executable
  TSM_TEST_TMPDIR    where temporary files go
"""
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

BINARY = os.environ["TSM_BINARY"]
OTLP_DIR = os.environ["TSM_OTLP_DIR"]
RECEIVER_JS = os.environ["TSM_OTLP_RECEIVER"]
NODE = os.environ.get("TSM_NODE", "node")
TMP_ROOT = os.environ.get("TSM_TEST_TMPDIR") or None
if TMP_ROOT:
    os.makedirs(TMP_ROOT, exist_ok=True)

# Hang guards only: a run that exceeds them has hung.
STARTUP_TIMEOUT_S = 30
EXIT_TIMEOUT_S = 60


def skip_unless_receiver_installed():
    """Exits 77 (meson: skipped) when the receiver's npm packages are
    missing. Called before unittest.main(): inside a test, unittest would
    turn the exit into an error."""
    modules = os.path.join(os.path.dirname(RECEIVER_JS), "node_modules",
                           "@opentelemetry", "otlp-transformer")
    if not os.path.isdir(modules):
        print(f"skipped: {modules} is missing (run npm ci in {os.path.dirname(RECEIVER_JS)})")
        sys.exit(77)


def free_port():
    """A port nothing listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def poll(condition, timeout, interval=0.1):
    """condition()'s first truthy value within timeout, else its last value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    return condition()


class Receiver:
    """The Node OTLP/HTTP receiver on one port; can be stopped and started
    again on the same port (its state starts empty each time)."""

    def __init__(self, port=0):
        self.port = port
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen([NODE, RECEIVER_JS, "--port", str(self.port)],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            self.process.kill()
            raise AssertionError(f"receiver did not start: {line!r} {self.process.stderr.read()}")
        self.port = int(line.split()[1])

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process is not None:
            self.process.stdout.close()
            self.process.stderr.close()
        self.process = None

    def control(self, **settings):
        request = urllib.request.Request(self.url + "/control", data=json.dumps(settings).encode(),
                                         method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def state(self):
        with urllib.request.urlopen(self.url + "/state", timeout=10) as response:
            return json.loads(response.read())


class Simulation:
    """One `simulate` process with prometheus and otlp; output collected on
    reader threads."""

    def __init__(self, tmp, otlp_settings, *args):
        config = os.path.join(tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({"otlp": otlp_settings}, file)
        self.args = [BINARY, "simulate", "--enable-metrics", "--metrics-port", "0",
                     "--metrics-reporters", "prometheus", "--metrics-reporters", "otlp",
                     "--metrics-reporter-config", config, "--metrics-plugin-dir", OTLP_DIR, *args]
        self.process = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        self.stdout_lines = []
        self.stderr_lines = []
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(self.process.stdout,
                                                                   self.stdout_lines), daemon=True),
                         threading.Thread(target=self._read, args=(self.process.stderr,
                                                                   self.stderr_lines), daemon=True)]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, lines):
        for line in stream:
            with self._changed:
                lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    def wait_for_line(self, prefix, timeout=STARTUP_TIMEOUT_S):
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.stdout_lines:
                    if line.startswith(prefix):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and
                                 not self._readers[0].is_alive()):
                    raise AssertionError(f"no line starting {prefix!r}:\n{self.describe()}")
                self._changed.wait(min(left, 0.2))

    def metrics_url(self):
        return self.wait_for_line("Prometheus metrics: ").split(": ", 1)[1]

    def wait(self, timeout=EXIT_TIMEOUT_S):
        status = self.process.wait(timeout)
        for reader in self._readers:
            reader.join(timeout)
        self.process.stdout.close()
        self.process.stderr.close()
        return status

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.wait()

    def output_table(self):
        """{process: [accepted, delivered, dropped, discarded, failed]} of the otlp output."""
        rows = {}
        for line in self.stdout_lines:
            fields = line.split()
            if len(fields) == 8 and fields[2] == "otlp":
                rows[fields[0]] = fields[3:]
        return rows

    def plugin_lines(self, text):
        return [line for line in self.stderr_lines if text in line]

    def children(self):
        """pids of the running producer processes."""
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == self.process.pid:
                    pids.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
        return pids

    def describe(self):
        return (f"command: {' '.join(self.args)}\n--- stdout\n" + "\n".join(self.stdout_lines) +
                "\n--- stderr\n" + "\n".join(self.stderr_lines) + "\n---")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def prometheus_series(text):
    """{(sample name, frozenset(labels)): value} of the engine's series."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("tokenspeed:"):
                continue
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = float(labels["le"])
            out[(sample.name, frozenset(labels.items()))] = sample.value
    return out


def otlp_series(state):
    """The receiver's cumulative points summed over instances, as Prometheus
    samples: monotonic Sums as NAME_total, Histograms as _bucket (cumulative,
    le), _count and _sum. Gauges are left out (see otlp_gauges)."""
    out = {}

    def add(name, labels, value):
        key = (name, frozenset(labels.items()))
        out[key] = out.get(key, 0) + value

    for point in state["series"]:
        labels = dict(point["attributes"])
        if point["type"] == "sum":
            add(point["name"] + "_total", labels, point["value"])
        elif point["type"] == "histogram":
            add(point["name"] + "_count", labels, point["count"])
            add(point["name"] + "_sum", labels, point["sum"])
            running = 0
            bounds = point["explicit_bounds"] + [math.inf]
            for bound, count in zip(bounds, point["bucket_counts"]):
                running += count
                add(point["name"] + "_bucket", dict(labels, le=float(bound)), running)
    return out


def otlp_gauges(state, combine=max):
    """{(name, labels): value}: each gauge's last value per instance, combined
    over instances as the metric's Prometheus gauge mode does (livemax: max)."""
    values = {}
    for point in state["series"]:
        if point["type"] == "gauge":
            key = (point["name"], frozenset(point["attributes"].items()))
            values.setdefault(key, []).append(point["value"])
    return {key: combine(vs) for key, vs in values.items()}


def assert_otlp_equals_prometheus(test, state, exposition):
    """Every counter total, histogram bucket count, count and sum of /metrics
    equals the OTLP points summed over instances (a series that never had an
    event shows 0 on /metrics and has no point)."""
    prometheus = {key: value for key, value in prometheus_series(exposition).items()
                  if not key[0].endswith(("_created",)) and
                  (key[0].endswith(("_total", "_bucket", "_count", "_sum")))}
    otlp = otlp_series(state)
    test.assertTrue(otlp, "the receiver decoded no Sum or Histogram point")
    test.assertLessEqual(set(otlp) - set(prometheus), set(),
                         "OTLP series missing on /metrics")
    mismatches = []
    for key, value in sorted(prometheus.items(), key=str):
        got = otlp.get(key, 0)
        if not math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-9):
            mismatches.append(f"{key[0]} {dict(key[1])}: /metrics {value}, OTLP {got}")
    test.assertEqual(mismatches, [])


def make_tmp():
    return tempfile.mkdtemp(dir=TMP_ROOT)
