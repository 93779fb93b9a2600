"""An output whose emit blocks for an hour: it is abandoned at the shutdown
deadline, as a binary plugin's would be."""
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


class BlockingSink(Sink):
    def emit(self, event):
        time.sleep(3600)  # the fault: an emit that never returns

    def close(self, timeout):
        self.record_close(timeout)


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("blocking_emit_output", validate=dict, create_sink=BlockingSink,
                             start_node=None, override=False)
