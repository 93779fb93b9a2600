"""The reference run's prometheus_client: the installed one, in its
multiprocess mode. Debian's python3-prometheus-client (0.16) predates the
gauge modes mostrecent and livemostrecent (0.18); with such a version they
are run as max and livemax. That gives the same /metrics for a series that
one process sets, which is how the engine programs use these modes (a series
per engine or rank); what distinguishes mostrecent across processes is
tested against fixed expectations in test_prometheus_client_compat.py."""
import prometheus_client
from prometheus_client import (  # noqa: F401 - re-exported for the programs
    CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Enum, Histogram, Info, Summary,
    generate_latest, make_asgi_app, make_wsgi_app, multiprocess,
)

_STAND_INS = {"mostrecent": "max", "livemostrecent": "livemax"}


class Gauge(prometheus_client.Gauge):
    def __init__(self, *args, multiprocess_mode="all", **kwargs):
        if multiprocess_mode not in prometheus_client.Gauge._MULTIPROC_MODES:
            multiprocess_mode = _STAND_INS[multiprocess_mode]
        super().__init__(*args, multiprocess_mode=multiprocess_mode, **kwargs)
