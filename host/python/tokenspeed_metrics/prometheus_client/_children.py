"""The children labels() returns: a series handle whose recording methods
are the native child's own bound methods (a cached child's inc() is one
native call), plus what prometheus_client's children offer around them
(time(), track_inprogress(), count_exceptions(), set_to_current_time(), a
histogram's _sum/_buckets/_upper_bounds for the batched idiom)."""
import time as _time

from ._batched_observe import batched_parts
from .context_managers import ExceptionCounter, InprogressTracker, Timer


def _no_value_reads(self):
    raise NotImplementedError(
        "tokenspeed_metrics.prometheus_client: reading a value back (_value, get()) is not "
        "offered: the host keeps the values; /metrics and the outputs show them")


class _Child:
    __slots__ = ("_family", "_labelvalues")

    def __init__(self, family, labelvalues):
        self._family = family
        self._labelvalues = labelvalues

    def labels(self, *args, **kwargs):
        raise ValueError("%s already has labels set (%s); can not chain calls to .labels()"
                         % (self._family, dict(zip(self._family._labelnames, self._labelvalues))))

    _value = property(_no_value_reads)

    def __repr__(self):
        return "%s(%s%s)" % (type(self).__name__, self._family._name,
                             dict(zip(self._family._labelnames, self._labelvalues)))


class CounterChild(_Child):
    __slots__ = ("inc",)

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues)
        self.inc = native.inc

    def count_exceptions(self, exception=Exception):
        return ExceptionCounter(self, exception)


class GaugeChild(_Child):
    __slots__ = ("set", "inc", "dec")

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues)
        self.set = native.set
        self.inc = native.inc
        self.dec = native.dec

    def set_to_current_time(self):
        self.set(_time.time())

    def track_inprogress(self):
        return InprogressTracker(self)

    def time(self):
        return Timer(self, "set")

    def set_function(self, function):
        raise NotImplementedError(
            "Gauge.set_function() is not offered: prometheus_client's multiprocess mode leaves "
            "such a gauge out of /metrics too; call set(value) when the value changes instead")


def _recorder(native):
    """record(total, count): count samples of total / count in one observe."""
    exact = getattr(native, "observe_total", None)
    if exact is not None:
        return exact
    observe = native.observe
    return lambda total, count: observe(total / count, count)


class HistogramChild(_Child):
    __slots__ = ("observe", "_sum", "_buckets", "_upper_bounds")

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues)
        self.observe = native.observe
        self._upper_bounds = family._upper_bounds
        self._sum, self._buckets = batched_parts(self._upper_bounds, _recorder(native))

    def time(self):
        return Timer(self, "observe")


class SummaryChild(_Child):
    __slots__ = ("observe",)

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues)
        self.observe = native.observe

    def time(self):
        return Timer(self, "observe")
