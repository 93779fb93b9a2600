"""Counter, Gauge, Histogram, Summary, Info and Enum with prometheus_client's
constructors, built on tokenspeed_metrics' native families: the node is the
registry, the launcher's /metrics merges every process as prometheus_client's
multiprocess mode does. Differences raise; see docs/python.md ("The
prometheus_client module")."""
import re
import threading

import _tokenspeed_metrics as _native

import tokenspeed_metrics as _tsm

from ._children import CounterChild, GaugeChild, HistogramChild, SummaryChild
from ._node import collects_node, node_metrics
from .context_managers import ExceptionCounter, InprogressTracker, Timer
from .metrics_core import Metric
from .registry import REGISTRY

INF = float("inf")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")


def _build_full_name(metric_type, name, namespace, subsystem, unit):
    full_name = "_".join(part for part in (namespace, subsystem, name) if part)
    if metric_type == "counter" and full_name.endswith("_total"):
        full_name = full_name[:-6]
    if unit and not full_name.endswith("_" + unit):
        full_name += "_" + unit
    if unit and metric_type in ("info", "stateset"):
        raise ValueError("Metric name is of a type that cannot have a unit: " + full_name)
    return full_name


def disable_created_metrics():
    """No effect: there is no _created sample, as in prometheus_client's
    multiprocess mode (which keeps none in its files)."""


def enable_created_metrics():
    """No effect: _created samples are not offered, as in prometheus_client's
    multiprocess mode."""


class _CompatFamily:
    """What every family adds to its native base: prometheus_client's names,
    registration, remove() and clear(). labels() is the native base's: it
    makes and caches this family's child class (_children.py) and returns
    the child of a repeated call without hashing its labels."""
    _type = None
    _child_class = None
    _node_family = True  # what a registry accepts

    def _prepare(self, name, documentation, labelnames, namespace, subsystem, unit):
        if isinstance(labelnames, str):
            raise ValueError("labelnames must be a sequence of names, not the string %r"
                             % labelnames)
        self._name = _build_full_name(self._type, name, namespace, subsystem, unit)
        self._documentation = documentation
        self._unit = unit
        self._labelnames = tuple(labelnames)  # prometheus_client's order, for positional labels()
        # A set's order differs between processes (string hashing): the host
        # gets the names sorted so every process defines the family alike.
        native_names = (tuple(sorted(self._labelnames))
                        if isinstance(labelnames, (set, frozenset)) else self._labelnames)
        self._reorder = native_names != self._labelnames
        return native_names

    def _finish(self, registry):
        """After the native base's __init__: labels() makes this family's
        children (positional values in prometheus_client's order), and the
        family joins registry."""
        self._set_child_class(self._child_class, self._labelnames)
        # labels() bound once and kept in the instance: family.labels(...)
        # finds it there instead of binding the method on every call.
        self.labels = self.labels
        if registry:
            registry.register(self)

    def _host_order(self, labelvalues):
        """Label values in prometheus_client's order as the host orders them."""
        if not self._reorder:
            return labelvalues
        by_name = dict(zip(self._labelnames, labelvalues))
        return tuple(by_name[name] for name in self.labelnames)

    def remove(self, *labelvalues):
        """Forgets the cached child. The series stays on /metrics, as it
        does in prometheus_client's multiprocess mode (its file keeps it)."""
        if not self._labelnames:
            raise ValueError("No label names were set when constructing %s" % self)
        if len(labelvalues) != len(self._labelnames):
            raise ValueError("Incorrect label count (expected %d, got %s)"
                             % (len(self._labelnames), labelvalues))
        wanted = tuple(str(v) for v in labelvalues)
        if not self._forget_child(self._host_order(wanted)):
            raise KeyError(wanted)

    def clear(self):
        """Forgets every cached child; the series stay on /metrics (see remove)."""
        self._forget_children()

    def describe(self):
        return [Metric(self._name, self._documentation, self._type, self._unit)]

    def collect(self):
        """This family as the node's merged exposition shows it in the
        launcher; elsewhere with this process's own figures."""
        if collects_node():
            exposed = self._exposed_name  # a view may rename the family
            return [m for m in node_metrics() if m.name == exposed]
        return [self._process_metric()]

    def _process_metric(self):
        """This family with this process's own figures, as prometheus_client's
        collect() gives them outside its multiprocess collector: its one
        series when it has no labels, else every series this process made
        through labels() and keeps (remove() and clear() forget them, as
        there)."""
        metric = Metric(self._name, self._documentation, self._type, self._unit)
        children = ([self._unlabelled()] if not self._labelnames
                    else list(self._children.values()))
        for child in children:
            labels = dict(zip(self._labelnames, child._labelvalues))
            for suffix, extra, value in child._samples():
                metric.add_sample(self._name + suffix, {**labels, **extra}, value)
        return metric

    def __str__(self):
        return "%s:%s" % (self._type, self._name)

    def __repr__(self):
        return "%s.%s(%s)" % (type(self).__module__, type(self).__name__, self._name)


class Counter(_CompatFamily, _tsm.Counter):
    _type = "counter"
    _child_class = CounterChild

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None):
        native_names = self._prepare(name, documentation, labelnames, namespace, subsystem, unit)
        _native.CounterFamily.__init__(self, self._name, documentation, native_names, unit)
        self._finish(registry)

    def count_exceptions(self, exception=Exception):
        self._unlabelled()
        return ExceptionCounter(self, exception)

    @property
    def _value(self):
        return self._unlabelled()._value


class Gauge(_CompatFamily, _tsm.Gauge):
    _type = "gauge"
    _child_class = GaugeChild
    _MULTIPROC_MODES = frozenset(_tsm.MULTIPROCESS_MODES)  # every mode of prometheus_client

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None, multiprocess_mode="all"):
        if multiprocess_mode not in self._MULTIPROC_MODES:
            raise ValueError("Invalid multiprocess mode: " + str(multiprocess_mode))
        self._multiprocess_mode = multiprocess_mode
        native_names = self._prepare(name, documentation, labelnames, namespace, subsystem, unit)
        _native.GaugeFamily.__init__(self, self._name, documentation, native_names, unit, None,
                                     multiprocess_mode)
        self._finish(registry)

    def set_to_current_time(self):
        self._unlabelled().set_to_current_time()

    def track_inprogress(self):
        self._unlabelled()
        return InprogressTracker(self)

    def time(self):
        return Timer(self, "set")

    def set_function(self, function):
        self._unlabelled().set_function(function)

    @property
    def _value(self):
        return self._unlabelled()._value


def _prepare_buckets(source_buckets):
    buckets = [float(b) for b in source_buckets]
    if buckets != sorted(buckets):
        raise ValueError("Buckets not in sorted order")
    if buckets and buckets[-1] != INF:
        buckets.append(INF)
    if len(buckets) < 2:
        raise ValueError("Must have at least two buckets")
    return buckets


class Histogram(_CompatFamily, _tsm.Histogram):
    _type = "histogram"
    _child_class = HistogramChild
    DEFAULT_BUCKETS = _tsm.DEFAULT_BUCKETS

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None, buckets=DEFAULT_BUCKETS, *, native=False,
                 native_max_buckets=160, native_max_scale=20, native_zero_threshold=0.0):
        # native: exponential buckets, as tokenspeed_metrics.Histogram has them
        # (prometheus_client has no such histogram; the keywords are ours).
        self._engine_bounds = _prepare_buckets(buckets)
        native_names = self._prepare(name, documentation, labelnames, namespace, subsystem, unit)
        if "le" in self._labelnames:
            raise ValueError("Reserved label metric name: le")
        classic = [] if native and buckets is self.DEFAULT_BUCKETS else self._engine_bounds
        _native.HistogramFamily.__init__(self, self._name, documentation, native_names, unit,
                                         classic, "livemax", native=bool(native),
                                         native_max_buckets=native_max_buckets,
                                         native_max_scale=native_max_scale,
                                         native_zero_threshold=float(native_zero_threshold))
        self._finish(registry)

    def time(self):
        return Timer(self, "observe")

    @property
    def _upper_bounds(self):
        """The bounds with +Inf: those the host records with (a view may have
        changed the engine's), as a child shows them; a family with labels
        gives the engine's, as it has no series itself."""
        if self._labelnames:
            return self._engine_bounds
        return self._unlabelled()._upper_bounds

    # The batched idiom on a family without labels.
    @property
    def _sum(self):
        return self._unlabelled()._sum

    @property
    def _buckets(self):
        return self._unlabelled()._buckets


class Summary(_CompatFamily, _tsm.Summary):
    """count and sum, no quantiles (prometheus_client has none either)."""
    _type = "summary"
    _child_class = SummaryChild

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None):
        native_names = self._prepare(name, documentation, labelnames, namespace, subsystem, unit)
        if "quantile" in self._labelnames:
            raise ValueError("Reserved label metric name: quantile")
        _native.SummaryFamily.__init__(self, self._name, documentation, native_names, unit)
        self._finish(registry)

    def time(self):
        return Timer(self, "observe")

    @property
    def _count(self):
        return self._unlabelled()._count

    @property
    def _sum(self):
        return self._unlabelled()._sum


class Info:
    """Key-value pairs, shown as prometheus_client's single-process
    exposition shows them: a gauge <name>_info set to 1 with the pairs as
    labels (its multiprocess mode leaves Info out of /metrics). The pairs are
    fixed by the first info() call: the host cannot remove a series."""
    _type = "info"
    _node_family = True

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None):
        self._name = _build_full_name("info", name, namespace, subsystem, unit)
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._unit = unit
        self._lock = threading.Lock()
        self._gauge = None
        self._value = None
        if registry:
            registry.register(self)

    def labels(self, *labelvalues, **labelkwargs):
        raise NotImplementedError(
            "Info.labels() is not offered: give every pair to info({...}) instead")

    def info(self, val):
        if set(self._labelnames).intersection(val.keys()):
            raise ValueError("Overlapping labels for Info metric, metric: %s child: %s"
                             % (self._labelnames, val))
        val = {str(k): str(v) for k, v in val.items()}
        with self._lock:
            if self._gauge is None:
                self._gauge = _tsm.Gauge(self._name + "_info", self._documentation,
                                         tuple(sorted(val)), multiprocess_mode="max")
                self._value = val
            elif val != self._value:
                raise ValueError(
                    "Info %s: info() was already called with %s; the host cannot remove that "
                    "series, so the pairs cannot change: use a Gauge with the pairs as labels "
                    "instead" % (self._name, self._value))
            self._gauge.labels(**val).set(1)

    def describe(self):
        return [Metric(self._name, self._documentation, "info")]

    def _process_metric(self):
        """As prometheus_client's collect() gives it in this process: the
        pairs of this process's info() call (none yet: no pairs), value 1."""
        metric = Metric(self._name, self._documentation, "info")
        if not self._labelnames:
            with self._lock:
                pairs = dict(self._value or {})
            metric.add_sample(self._name + "_info", pairs, 1.0)
        return metric


class Enum:
    """Which of a set of states is true: a gauge <name>{<name>="<state>"}
    of 1 for the current state and 0 for the others, as prometheus_client's
    single-process exposition shows it (its multiprocess mode leaves Enum
    out). Processes merge by the most recent state() (mode mostrecent)."""
    _type = "stateset"
    _node_family = True

    def __init__(self, name, documentation, labelnames=(), namespace="", subsystem="", unit="",
                 registry=REGISTRY, _labelvalues=None, states=None):
        self._name = _build_full_name("stateset", name, namespace, subsystem, unit)
        self._labelnames = tuple(labelnames)
        self._documentation = documentation
        self._unit = unit
        if name in self._labelnames:
            raise ValueError("Overlapping labels for Enum metric: %s" % name)
        if not states:
            raise ValueError("No states provided for Enum metric: %s" % name)
        self._states = list(states)
        if not _LABEL_NAME.match(self._name):
            raise ValueError(
                "Enum %s: its name is also the label of its states, and a label name takes "
                "letters, digits and '_' only (a scraper rejects the exposition otherwise): "
                "name the Enum without ':'" % self._name)
        self._gauge = _tsm.Gauge(self._name, documentation, self._labelnames + (self._name,),
                                 multiprocess_mode="mostrecent")
        self._labelvalues = ()
        self._children = {}
        if registry:
            registry.register(self)

    def labels(self, *labelvalues, **labelkwargs):
        if labelkwargs:
            labelvalues = tuple(str(labelkwargs[n]) for n in self._labelnames)
        key = tuple(str(v) for v in labelvalues)
        if len(key) != len(self._labelnames):
            raise ValueError("Incorrect label count")
        child = self._children.get(key)
        if child is None:
            child = self._children.setdefault(key, _EnumChild(self, key))
            child.state(self._states[0])  # the first state is the default, as in prometheus_client
        return child

    def state(self, state):
        if self._labelnames:
            raise ValueError("stateset metric is missing label values")
        self.labels().state(state)

    def describe(self):
        return [Metric(self._name, self._documentation, "stateset")]

    def _process_metric(self):
        """As prometheus_client's collect() gives it in this process: each
        series' states, 1 for the current one (the first state until
        state() is called)."""
        metric = Metric(self._name, self._documentation, "stateset")
        current = {key: child._index for key, child in list(self._children.items())}
        if not self._labelnames:
            current.setdefault((), 0)
        for key, index in current.items():
            labels = dict(zip(self._labelnames, key))
            for i, state in enumerate(self._states):
                metric.add_sample(self._name, {**labels, self._name: state},
                                  1 if i == index else 0)
        return metric


class _EnumChild:
    def __init__(self, enum, labelvalues):
        self._enum = enum
        self._labelvalues = labelvalues
        self._index = 0

    def state(self, state):
        index = self._enum._states.index(state)
        self._index = index
        for i, name in enumerate(self._enum._states):
            self._enum._gauge.labels(*self._labelvalues, name).set(1 if i == index else 0)
