"""An output whose close ignores its timeout: the process exits within its
shutdown budget anyway."""
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


class StuckCloseSink(Sink):
    def emit(self, event):
        self.emitted += 1

    def close(self, timeout):
        self.record_close(timeout)
        time.sleep(3600)  # the fault: a close that ignores its timeout


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("stuck_close_output", validate=dict, create_sink=StuckCloseSink,
                             start_node=None, override=False)
