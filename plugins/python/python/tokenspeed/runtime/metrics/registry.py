"""tokenspeed.runtime.metrics.registry — declares metric output plugins, as
TokenSpeed's specification writes it. Shipped by tokenspeed-metrics for its
Python bridge; it records declarations only while the host runs a package's
register() and never creates a sink or any other resource itself."""

METRIC_REPORTER_API_VERSION = 1

# Set by the host's bridge for the duration of one package's register() call:
# a function taking the same arguments as register_metric_reporter.
_declare = None


def register_metric_reporter(name, *, validate, create_sink, start_node, override=False):
    """Declares the output `name` (selected with --metrics-reporters name).

    validate(config) -> dict       launcher: check and normalize the settings
    create_sink(producer_config)   every producer: one process-local sink
    start_node(config) or None     launcher: a session with producer_config
                                   and close(timeout); None when the
                                   normalized config is the producer config
    override                       True to replace an existing name
    """
    if _declare is None:
        raise RuntimeError("register_metric_reporter() is called only from a plugin's "
                           "register(), while TokenSpeed discovers tokenspeed.plugins "
                           "entry points")
    _declare(name, validate=validate, create_sink=create_sink, start_node=start_node,
             override=override)
