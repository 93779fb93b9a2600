"""An output whose validate raises: a startup error naming the reporter."""


def validate(config):
    raise ValueError("unsupported setting 'colour'")


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("raising_validate_output", validate=validate,
                             create_sink=lambda config: None, start_node=None, override=False)
