"""A histogram child's _sum, _buckets and _upper_bounds, for the batched
idiom engines copy from prometheus_client's observe():

    child._sum.inc(interval)                      # the batch's total
    for i, bound in enumerate(child._upper_bounds):
        if interval / n <= bound:
            child._buckets[i].inc(n)              # n samples of interval / n
            break

The pair becomes ONE native observe_total(interval, n): n samples of
interval / n, the sum growing by interval exactly as prometheus_client's
does, one weighted event for the outputs. Pairing is checked per thread: a
bucket inc without a pending sum, two sums in a row, or a bucket other than
the one interval / n falls in raise ValueError naming observe(value,
weight), never a silent difference.

Reads give this process's own figures, as prometheus_client's multiprocess
mode does: _sum.get() (and _sum._value), _buckets[i].get() (and
_buckets[i]._value, the form SGLang's straggler check sums), not
cumulative."""
import math
import threading

_USE_INSTEAD = "use child.observe(value, weight) (weight samples of value) instead"


class BatchedSum:
    """child._sum: inc(total) opens a batch that the next _buckets[i].inc(n)
    of the same thread closes."""
    __slots__ = ("_pending", "_read")

    def __init__(self, read):
        self._pending = {}  # thread ident -> the batch's total
        self._read = read  # this process's sum

    def inc(self, amount=1):
        thread = threading.get_ident()
        if thread in self._pending:
            raise ValueError(
                "histogram _sum.inc() twice without a _buckets[i].inc(n) between: the batched "
                "idiom is one _sum.inc(total) then one _buckets[i].inc(n); " + _USE_INSTEAD)
        self._pending[thread] = float(amount)

    def take(self):
        return self._pending.pop(threading.get_ident(), None)

    def get(self):
        """This process's sum, with this thread's pending total (prometheus_client's
        _sum.inc() has added it already)."""
        pending = self._pending.get(threading.get_ident())
        total = self._read()
        return total if pending is None else total + pending

    _value = property(get)

    def get_exemplar(self):
        return None


class BatchedBucket:
    """child._buckets[i]: inc(n) closes the pending batch as n samples of
    total / n, which must fall in this bucket."""
    __slots__ = ("_batch", "_index", "_upper_bounds", "_record", "_read")

    def __init__(self, batch, index, upper_bounds, record, read):
        self._batch = batch
        self._index = index
        self._upper_bounds = upper_bounds
        self._record = record  # record(total, count): one native observe_total
        self._read = read  # this process's count per bucket, not cumulative

    def inc(self, amount=1):
        total = self._batch.take()
        if total is None:
            raise ValueError(
                "histogram _buckets[%d].inc() without a preceding _sum.inc(total) in this "
                "thread: a bucket alone would leave the sum behind; %s" % (self._index,
                                                                          _USE_INSTEAD))
        count = amount
        if isinstance(count, float) and count.is_integer():
            count = int(count)
        if not isinstance(count, int) or count <= 0:
            raise ValueError(
                "histogram _buckets[%d].inc(%r): the batched idiom needs a positive whole "
                "number of samples; %s" % (self._index, amount, _USE_INSTEAD))
        value = total / count
        expected = next((i for i, bound in enumerate(self._upper_bounds) if value <= bound),
                        len(self._upper_bounds) - 1)
        if expected != self._index and not math.isnan(value):
            raise ValueError(
                "histogram _buckets[%d].inc(%d) after _sum.inc(%r): %r samples of %r belong in "
                "bucket %d (le=%r); %s" % (self._index, count, total, count, value, expected,
                                           self._upper_bounds[expected], _USE_INSTEAD))
        self._record(total, count)

    def get(self):
        """This process's count of this bucket (not cumulative)."""
        return self._read()[self._index]

    _value = property(get)

    def get_exemplar(self):
        return None


def batched_parts(upper_bounds, record, read_sum, read_buckets):
    """(_sum, _buckets) of one child: record(total, count) observes,
    read_sum() and read_buckets() give this process's figures."""
    batch = BatchedSum(read_sum)
    buckets = tuple(BatchedBucket(batch, i, upper_bounds, record, read_buckets)
                    for i in range(len(upper_bounds)))
    return batch, buckets
