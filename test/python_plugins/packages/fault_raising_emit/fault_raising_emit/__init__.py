"""An output whose emit raises from its eleventh event: the sink is disabled,
other outputs go on, and it is still closed at shutdown."""
import json
import os
import time


class Sink:
    """Writes how many events it took to {path} (pid replaced) at close."""

    def __init__(self, config):
        self._path = config.get("path", "").replace("{pid}", str(os.getpid()))
        self.emitted = 0

    def record_close(self, timeout):
        if self._path:
            with open(self._path, "w") as out:
                json.dump({"emitted": self.emitted, "timeout": timeout}, out)


class RaisingSink(Sink):
    def emit(self, event):
        if self.emitted >= 10:
            raise RuntimeError("the destination rejected the event")
        self.emitted += 1

    def close(self, timeout):
        self.record_close(timeout)


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("raising_emit_output", validate=dict, create_sink=RaisingSink,
                             start_node=None, override=False)
