"""Replaces example_output (entry points run in name order: this one after
example_metrics) with override=True; its sink writes "overridden" at close."""
import json
import os


class Sink:
    def __init__(self, config):
        self._path = config["endpoint"].split("://", 1)[1].replace("{pid}", str(os.getpid()))

    def emit(self, event):
        pass

    def close(self, timeout):
        with open(self._path, "w") as out:
            json.dump({"overridden": True}, out)


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("example_output", validate=dict, create_sink=Sink,
                             start_node=None, override=True)
