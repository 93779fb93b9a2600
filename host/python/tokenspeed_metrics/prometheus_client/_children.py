"""The children labels() returns: a series handle whose recording methods
are the native child's own bound methods (a cached child's inc() is one
native call), plus what prometheus_client's children offer around them
(time(), track_inprogress(), count_exceptions(), set_to_current_time(), a
histogram's _sum/_buckets/_upper_bounds for the batched idiom, a summary's
_count/_sum) and their reads. A read gives this process's own figures, as
prometheus_client's multiprocess mode does (/metrics merges every
process's): _value.get() of a counter or gauge, _sum.get() and
_buckets[i].get() (or ._value) of a histogram, _count.get() and _sum.get()
of a summary."""
import time as _time

from ._batched_observe import batched_parts
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
    __slots__ = ("_family", "_labelvalues", "_native")

    def __init__(self, family, labelvalues, native):
        self._family = family
        self._labelvalues = labelvalues
        # The native child; for a family without labels the family itself,
        # whose methods (recording and reads) are its unlabelled child's.
        self._native = native

    def labels(self, *args, **kwargs):
        raise ValueError("%s already has labels set (%s); can not chain calls to .labels()"
                         % (self._family, dict(zip(self._family._labelnames, self._labelvalues))))

    def __repr__(self):
        return "%s(%s%s)" % (type(self).__name__, self._family._name,
                             dict(zip(self._family._labelnames, self._labelvalues)))


class CounterChild(_Child):
    __slots__ = ("inc",)

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues, native)
        self.inc = native.inc

    @property
    def _value(self):
        return ReadOnlyValue(self._native.get)

    def _samples(self):
        return (("_total", {}, self._native.get()),)

    def count_exceptions(self, exception=Exception):
        return ExceptionCounter(self, exception)


class GaugeChild(_Child):
    __slots__ = ("set", "inc", "dec")

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues, native)
        self.set = native.set
        self.inc = native.inc
        self.dec = native.dec

    @property
    def _value(self):
        return ReadOnlyValue(self._native.get)

    def _samples(self):
        return (("", {}, self._native.get()),)

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


class HistogramChild(_Child):
    __slots__ = ("observe", "_sum", "_buckets", "_upper_bounds")

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues, native)
        self.observe = native.observe
        self._upper_bounds = family._upper_bounds
        self._sum, self._buckets = batched_parts(self._upper_bounds, native.observe_total,
                                                 native.sum, native.bucket_counts)

    def _samples(self):
        """prometheus_client's: cumulative buckets, _count, then _sum (left
        out when the first bound is negative)."""
        counts = self._native.bucket_counts()
        samples, cumulative = [], 0.0
        for bound, count in zip(self._upper_bounds, counts):
            cumulative += count
            samples.append(("_bucket", {"le": python_bound_text(bound)}, cumulative))
        samples.append(("_count", {}, cumulative))
        if self._upper_bounds[0] >= 0:
            samples.append(("_sum", {}, self._native.sum()))
        return samples

    def time(self):
        return Timer(self, "observe")


class SummaryChild(_Child):
    __slots__ = ("observe", "_count", "_sum")

    def __init__(self, family, labelvalues, native):
        super().__init__(family, labelvalues, native)
        self.observe = native.observe
        counts = native.bucket_counts  # a summary's: (count,)
        self._count = ReadOnlyValue(lambda: counts()[0])
        self._sum = ReadOnlyValue(native.sum)

    def _samples(self):
        return (("_count", {}, self._count.get()), ("_sum", {}, self._sum.get()))

    def time(self):
        return Timer(self, "observe")
