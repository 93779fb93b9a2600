"""example_metrics — the specification's example output plugin package; its
register() is the specification's, word for word."""


def register():
    from tokenspeed.runtime.metrics.registry import (
        METRIC_REPORTER_API_VERSION,
        register_metric_reporter,
    )
    from example_metrics.adapter import create_sink, validate_config

    if METRIC_REPORTER_API_VERSION != 1:
        raise RuntimeError("Unsupported metric reporter API")

    register_metric_reporter(
        "example_output",
        validate=validate_config,
        create_sink=create_sink,
        start_node=None,
        override=False,
    )
