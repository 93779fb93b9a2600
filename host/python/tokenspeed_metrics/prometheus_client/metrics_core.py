"""Metric and the *MetricFamily classes: one family of what a registry
collects (name, documentation, type, unit, samples), as
prometheus_client.metrics_core gives them. A custom collector's collect()
returns these; their samples are the ones prometheus_client's families
make (a counter's <name>_total, a histogram's _bucket with le, _count and
_sum, ...), so generate_latest(registry) writes the same text."""
import re

from .samples import Sample

METRIC_TYPES = ("counter", "gauge", "summary", "histogram", "gaugehistogram", "unknown", "info",
                "stateset")
METRIC_NAME_RE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
METRIC_LABEL_NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
RESERVED_METRIC_LABEL_NAME_RE = re.compile(r"^__.*$")


class Metric:
    """One family and its samples. A unit is appended to the name unless the
    name ends with it; an unknown type or an invalid name raises ValueError
    ("untyped" is taken as "unknown")."""

    def __init__(self, name, documentation, typ, unit=""):
        if unit and not name.endswith("_" + unit):
            name += "_" + unit
        if not METRIC_NAME_RE.match(name):
            raise ValueError("Invalid metric name: " + name)
        if typ == "untyped":
            typ = "unknown"
        if typ not in METRIC_TYPES:
            raise ValueError("Invalid metric type: " + typ)
        self.name = name
        self.documentation = documentation
        self.unit = unit
        self.type = typ
        self.samples = []

    def add_sample(self, name, labels, value, timestamp=None, exemplar=None):
        self.samples.append(Sample(name, labels, value, timestamp, exemplar))

    def __eq__(self, other):
        return (isinstance(other, Metric) and self.name == other.name
                and self.documentation == other.documentation and self.type == other.type
                and self.unit == other.unit and self.samples == other.samples)

    def __repr__(self):
        return "Metric(%s, %s, %s, %s, %s)" % (self.name, self.documentation, self.type,
                                               self.unit, self.samples)


class _Family(Metric):
    """What every *MetricFamily shares: the label names, given either with
    labels=[...] (then add_metric() per series) or not at all (then the
    value given to the constructor is the one series without labels)."""

    def _labels_or_value(self, labels, value, what="value"):
        if labels is not None and value is not None:
            raise ValueError("Can only specify at most one of %s and labels." % what)
        self._labelnames = tuple(labels or ())

    def _series(self, labelvalues):
        return dict(zip(self._labelnames, labelvalues))


class UnknownMetricFamily(_Family):
    def __init__(self, name, documentation, value=None, labels=None, unit=""):
        Metric.__init__(self, name, documentation, "unknown", unit)
        self._labels_or_value(labels, value)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels, value, timestamp=None):
        self.samples.append(Sample(self.name, self._series(labels), value, timestamp))


UntypedMetricFamily = UnknownMetricFamily  # prometheus_client's older name


class CounterMetricFamily(_Family):
    """A counter: <name>_total per series (a name given with _total loses
    it), and <name>_created when add_metric() is given created."""

    def __init__(self, name, documentation, value=None, labels=None, created=None, unit=""):
        if name.endswith("_total"):
            name = name[:-6]
        Metric.__init__(self, name, documentation, "counter", unit)
        self._labels_or_value(labels, value)
        if value is not None:
            self.add_metric([], value, created)

    def add_metric(self, labels, value, created=None, timestamp=None):
        series = self._series(labels)
        self.samples.append(Sample(self.name + "_total", series, value, timestamp))
        if created is not None:
            self.samples.append(Sample(self.name + "_created", dict(series), created, timestamp))


class GaugeMetricFamily(_Family):
    def __init__(self, name, documentation, value=None, labels=None, unit=""):
        Metric.__init__(self, name, documentation, "gauge", unit)
        self._labels_or_value(labels, value)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels, value, timestamp=None):
        self.samples.append(Sample(self.name, self._series(labels), value, timestamp))


class SummaryMetricFamily(_Family):
    """A summary without quantiles: <name>_count and <name>_sum per series."""

    def __init__(self, name, documentation, count_value=None, sum_value=None, labels=None,
                 unit=""):
        Metric.__init__(self, name, documentation, "summary", unit)
        if (sum_value is None) != (count_value is None):
            raise ValueError("count_value and sum_value must be provided together.")
        self._labels_or_value(labels, count_value)
        if count_value is not None:
            self.add_metric([], count_value, sum_value)

    def add_metric(self, labels, count_value, sum_value, timestamp=None):
        self.samples.append(Sample(self.name + "_count", self._series(labels), count_value,
                                   timestamp))
        self.samples.append(Sample(self.name + "_sum", self._series(labels), sum_value,
                                   timestamp))


class HistogramMetricFamily(_Family):
    """A histogram: buckets are (le, cumulative count) or (le, count,
    exemplar), sorted, +Inf last. Per series <name>_bucket with le as given,
    then <name>_count (the +Inf bucket's count) and <name>_sum, both left
    out when sum_value is None or the first bound is negative."""

    def __init__(self, name, documentation, buckets=None, sum_value=None, labels=None, unit=""):
        Metric.__init__(self, name, documentation, "histogram", unit)
        if sum_value is not None and buckets is None:
            raise ValueError("sum value cannot be provided without buckets.")
        self._labels_or_value(labels, buckets, "buckets")
        if buckets is not None:
            self.add_metric([], buckets, sum_value)

    def add_metric(self, labels, buckets, sum_value, timestamp=None):
        for bucket in buckets:
            bound, count = bucket[:2]
            exemplar = bucket[2] if len(bucket) == 3 else None
            series = self._series(labels)
            series["le"] = bound
            self.samples.append(Sample(self.name + "_bucket", series, count, timestamp,
                                       exemplar))
        if float(buckets[0][0]) >= 0 and sum_value is not None:
            self.samples.append(Sample(self.name + "_count", self._series(labels),
                                       buckets[-1][1], timestamp))
            self.samples.append(Sample(self.name + "_sum", self._series(labels), sum_value,
                                       timestamp))


class GaugeHistogramMetricFamily(_Family):
    """A gauge histogram: per series <name>_bucket with le, then
    <name>_gcount (the +Inf bucket's) and <name>_gsum."""

    def __init__(self, name, documentation, buckets=None, gsum_value=None, labels=None,
                 unit=""):
        Metric.__init__(self, name, documentation, "gaugehistogram", unit)
        self._labels_or_value(labels, buckets, "buckets")
        if buckets is not None:
            self.add_metric([], buckets, gsum_value)

    def add_metric(self, labels, buckets, gsum_value, timestamp=None):
        for bound, count in buckets:
            series = self._series(labels)
            series["le"] = bound
            self.samples.append(Sample(self.name + "_bucket", series, count, timestamp))
        self.samples.append(Sample(self.name + "_gcount", self._series(labels), buckets[-1][1],
                                   timestamp))
        self.samples.append(Sample(self.name + "_gsum", self._series(labels), gsum_value,
                                   timestamp))


class InfoMetricFamily(_Family):
    """Key-value pairs: <name>_info of 1 with the pairs (after the series'
    labels) as labels."""

    def __init__(self, name, documentation, value=None, labels=None):
        Metric.__init__(self, name, documentation, "info")
        self._labels_or_value(labels, value)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels, value, timestamp=None):
        self.samples.append(Sample(self.name + "_info", dict(self._series(labels), **value), 1,
                                   timestamp))


class StateSetMetricFamily(_Family):
    """Which states are true: per series and state (sorted by name) a
    sample <name>{<name>="<state>"} of 1 or 0."""

    def __init__(self, name, documentation, value=None, labels=None):
        Metric.__init__(self, name, documentation, "stateset")
        self._labels_or_value(labels, value)
        if value is not None:
            self.add_metric([], value)

    def add_metric(self, labels, value, timestamp=None):
        labels = tuple(labels)
        for state, enabled in sorted(value.items()):
            series = dict(zip(self._labelnames + (self.name,), labels + (state,)))
            self.samples.append(Sample(self.name, series, 1 if enabled else 0, timestamp))
