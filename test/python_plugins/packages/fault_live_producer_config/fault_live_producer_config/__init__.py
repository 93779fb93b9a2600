"""An output whose start_node puts a live socket into producer_config: a
startup error naming the reporter; the session it returned is closed."""
import socket


class LiveSession:
    def __init__(self, config):
        self.socket = socket.socket()
        self.producer_config = {"endpoint": "udp://127.0.0.1:9", "socket": self.socket}
        self._closed_marker = config.get("closed_marker", "")

    def close(self, timeout):
        self.socket.close()
        if self._closed_marker:
            open(self._closed_marker, "w").close()


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("live_config_output", validate=dict,
                             create_sink=lambda config: None, start_node=LiveSession,
                             override=False)
