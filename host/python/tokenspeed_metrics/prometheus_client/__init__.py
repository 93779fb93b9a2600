"""tokenspeed_metrics.prometheus_client: prometheus_client's API on the
tokenspeed-metrics host. An engine imports it in place of prometheus_client
(`from tokenspeed_metrics.prometheus_client import Counter, Gauge, ...`) and
its metrics code runs unchanged: the launcher's /metrics (and
generate_latest(registry)) is what prometheus_client's multiprocess mode
gives, every selected output plugin receives the events, and a cached
child's inc() is one native call. What cannot be matched raises, naming what
to use instead; see docs/python.md ("The prometheus_client module")."""
from . import core, exposition, metrics, metrics_core, multiprocess, registry, samples
from .asgi import make_asgi_app
from .exposition import (
    CONTENT_TYPE_LATEST, delete_from_gateway, generate_latest, make_wsgi_app, push_to_gateway,
    pushadd_to_gateway, start_http_server, start_wsgi_server, write_to_textfile,
)
from .metrics import (
    Counter, Enum, Gauge, Histogram, Info, Summary, disable_created_metrics,
    enable_created_metrics,
)
from .metrics_core import Metric
from .registry import REGISTRY, CollectorRegistry

__all__ = (
    "CollectorRegistry", "REGISTRY", "Metric", "Counter", "Gauge", "Summary", "Histogram", "Info",
    "Enum", "CONTENT_TYPE_LATEST", "generate_latest", "make_wsgi_app", "make_asgi_app",
    "start_http_server", "start_wsgi_server", "write_to_textfile", "push_to_gateway",
    "pushadd_to_gateway", "delete_from_gateway", "disable_created_metrics",
    "enable_created_metrics",
)
