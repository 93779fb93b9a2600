"""The engine's own registry: declarations made here would stay in the engine."""
METRIC_REPORTER_API_VERSION = 1
DECLARED = []


def register_metric_reporter(name, *, validate, create_sink, start_node, override=False):
    DECLARED.append(name)
