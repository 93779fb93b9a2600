"""An output whose emit does nothing: what the bridge itself costs per event."""


class NoopSink:
    def emit(self, event):
        pass

    def close(self, timeout):
        pass


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("noop_output", validate=dict, create_sink=lambda config: NoopSink(),
                             start_node=None, override=False)
