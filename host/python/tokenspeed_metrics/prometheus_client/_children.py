"""The children labels() returns: the native module's children (labels()
makes them, without a Python frame; a child's inc() is one native call),
subclassed for what prometheus_client's children offer around recording
(time(), track_inprogress(), count_exceptions(), set_to_current_time(), a
summary's _count/_sum) and their reads. A histogram child's _sum, _buckets
and _upper_bounds for the batched idiom are native (native_idiom.hpp). A
read gives this process's own figures, as prometheus_client's multiprocess
mode does (/metrics merges every process's): _value.get() of a counter or
gauge, _sum.get() and _buckets[i].get() (or ._value) of a histogram,
_count.get() and _sum.get() of a summary."""
import time as _time

import _tokenspeed_metrics as _native

from ._exposition_reader import python_bound_text
from .context_managers import ExceptionCounter, InprogressTracker, Timer


class ReadOnlyValue:
    """A child's _value (counter, gauge) or a summary's _count and _sum:
    get() and _value give this process's figure."""
    __slots__ = ("get",)

    def __init__(self, read):
        self.get = read

    @property
    def _value(self):
        return self.get()

    def get_exemplar(self):
        return None  # prometheus_client's multiprocess mode keeps none either

    def _refuse(self, *_args, **_kwargs):
        raise NotImplementedError(
            "tokenspeed_metrics.prometheus_client: a child's _value (and a summary's _count, "
            "_sum) is read-only here: record through the child (inc, set, observe)")

    inc = set = _refuse


class _Child:
    """What every child adds to its native base (no fields: labels() makes
    the child natively). _family and _values (labelnames' order, as the host
    has them) are the native child's."""
    __slots__ = ()

    @property
    def _labelvalues(self):
        """The label values in the order the family was given its names."""
        family = self._family
        if not family._reorder:
            return self._values
        by_name = dict(zip(family.labelnames, self._values))
        return tuple(by_name[name] for name in family._labelnames)

    def labels(self, *args, **kwargs):
        raise ValueError("%s already has labels set (%s); can not chain calls to .labels()"
                         % (self._family, dict(zip(self._family._labelnames, self._labelvalues))))

    def __repr__(self):
        return "%s(%s%s)" % (type(self).__name__, self._family._name,
                             dict(zip(self._family._labelnames, self._labelvalues)))


class CounterChild(_Child, _native.CounterChild):
    __slots__ = ()

    @property
    def _value(self):
        return ReadOnlyValue(self.get)

    def _samples(self):
        return (("_total", {}, self.get()),)

    def count_exceptions(self, exception=Exception):
        return ExceptionCounter(self, exception)


class GaugeChild(_Child, _native.GaugeChild):
    __slots__ = ()

    @property
    def _value(self):
        return ReadOnlyValue(self.get)

    def _samples(self):
        return (("", {}, self.get()),)

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


class HistogramChild(_Child, _native.HistogramChild):
    __slots__ = ()

    def _samples(self):
        """prometheus_client's: cumulative buckets, _count, then _sum (left
        out when the first bound is negative)."""
        counts = self.bucket_counts()
        samples, cumulative = [], 0.0
        for bound, count in zip(self._upper_bounds, counts):
            cumulative += count
            samples.append(("_bucket", {"le": python_bound_text(bound)}, cumulative))
        samples.append(("_count", {}, cumulative))
        if self._upper_bounds[0] >= 0:
            samples.append(("_sum", {}, self.sum()))
        return samples

    def time(self):
        return Timer(self, "observe")


class SummaryChild(_Child, _native.SummaryChild):
    __slots__ = ()

    @property
    def _count(self):
        counts = self.bucket_counts  # a summary's: (count,)
        return ReadOnlyValue(lambda: counts()[0])

    @property
    def _sum(self):
        return ReadOnlyValue(self.sum)

    def _samples(self):
        return (("_count", {}, self._count.get()), ("_sum", {}, self._sum.get()))

    def time(self):
        return Timer(self, "observe")
