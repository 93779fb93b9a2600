"""A register() that starts a thread: registration must only declare factories."""
import threading
import time


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
    register_metric_reporter("threaded_output", validate=dict, create_sink=lambda config: None,
                             start_node=None, override=False)
