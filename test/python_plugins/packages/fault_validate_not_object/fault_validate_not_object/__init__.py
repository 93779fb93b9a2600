"""An output whose validate returns a list, not a JSON object: a startup error."""


def register():
    from tokenspeed.runtime.metrics.registry import register_metric_reporter
    register_metric_reporter("list_validate_output", validate=lambda config: ["a", "list"],
                             create_sink=lambda config: None, start_node=None, override=False)
