"""A register() that declares the reserved name prometheus."""


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("prometheus", validate=dict, create_sink=lambda config: None,
                             start_node=None, override=True)
