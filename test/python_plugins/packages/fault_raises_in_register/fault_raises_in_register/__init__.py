"""A register() that declares partial_output, then raises: the declaration is rolled back."""


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("partial_output", validate=dict, create_sink=lambda config: None,
                             start_node=None, override=False)
    raise RuntimeError("the vendor SDK is not installed")
