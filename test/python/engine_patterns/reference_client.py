"""The reference run's prometheus_client: the installed one, in its
multiprocess mode. Debian's python3-prometheus-client (0.16) predates the
gauge modes mostrecent and livemostrecent (0.18); with such a version they
are run as max and livemax. That gives the same /metrics for a series that
one process sets, which is how the engine programs use these modes (a series
per engine or rank); what distinguishes mostrecent across processes is
tested against fixed expectations in test_prometheus_client_compat.py.

ENGINE_PATTERNS_VIEWS names a views file (docs/views.md) that the run on
tokenspeed_metrics is given: here a histogram a view selects by its exact
name is made with the view's buckets, name and labels, as if written into the
engine's code (labels() takes the engine's values and leaves out the dropped
ones)."""
import json
import os

import prometheus_client
from prometheus_client import (  # noqa: F401 - re-exported for the programs
    CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Enum, Info, Summary,
    generate_latest, make_asgi_app, make_wsgi_app, multiprocess,
)

_STAND_INS = {"mostrecent": "max", "livemostrecent": "livemax"}


class Gauge(prometheus_client.Gauge):
    def __init__(self, *args, multiprocess_mode="all", **kwargs):
        if multiprocess_mode not in prometheus_client.Gauge._MULTIPROC_MODES:
            multiprocess_mode = _STAND_INS[multiprocess_mode]
        super().__init__(*args, multiprocess_mode=multiprocess_mode, **kwargs)


def _histogram_views():
    path = os.environ.get("ENGINE_PATTERNS_VIEWS")
    if not path:
        return {}
    with open(path) as views:
        return {view["select"]["name"]: view for view in json.load(views)["views"]}


_HISTOGRAM_VIEWS = _histogram_views()


class Histogram(prometheus_client.Histogram):
    def __init__(self, name, documentation="", labelnames=(), *args, **kwargs):
        view = _HISTOGRAM_VIEWS.get(name, {})
        if "buckets" in view:
            kwargs["buckets"] = view["buckets"]
        self._engine_labelnames = list(labelnames)
        kept = [label for label in labelnames if label not in view.get("drop_labels", ())]
        super().__init__(view.get("name", name), view.get("help", documentation), kept, *args,
                         **kwargs)

    def labels(self, *values, **named):
        if values:
            named = dict(zip(self._engine_labelnames, values))
        if not self._labelnames:
            return self
        return super().labels(**{k: v for k, v in named.items() if k in self._labelnames})
