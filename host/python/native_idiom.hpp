// native_idiom.hpp — a histogram child's _sum and _buckets[i], for the
// batched idiom engines copy from prometheus_client's observe():
//
//     child._sum.inc(interval)                      # the batch's total
//     for i, bound in enumerate(child._upper_bounds):
//         if interval / n <= bound:
//             child._buckets[i].inc(n)              # n samples of interval / n
//             break
//
// The pair becomes ONE observe_total(interval, n) of the child's handle: n
// samples of interval / n, the sum growing by interval exactly as
// prometheus_client's does, one weighted event for the outputs. Pairing is
// checked per thread: a bucket inc without a pending sum, two sums in a row,
// or a bucket other than the one interval / n falls in (in the bounds the
// child shows, a view's when one changed them, or the engine's own) raise
// ValueError naming observe(value, weight), never a silent difference. The
// host places the samples by their value, so a view's buckets get them
// exactly (docs/views.md, "Python"). Reads give this
// process's own figures, as prometheus_client's multiprocess mode does:
// _sum.get() (with this thread's pending total) and _buckets[i].get() (not
// cumulative; also as ._value, which SGLang's straggler check sums).
// Touched with the GIL held; never records anything but the paired batch.
// Tested in test/python/test_native_labels_and_idiom.py and
// test/python/test_prometheus_client_compat.py.
#pragma once

#include <Python.h>

#include "native_handles.hpp"

namespace tokenspeed::metrics::python {

// Makes child->idiom_sum and child->idiom_buckets (one per bucket of the
// bounds the child shows, +Inf last), and again when those bounds changed
// (the parts made before keep recording into the series). False with a
// Python exception set on failure.
bool make_idiom_parts(ChildObject* child);

// Called by the child's dealloc: its _sum (which its buckets hold, and
// which may outlive it) takes over its series (family, values, handle) and
// keeps recording into it.
void detach_idiom_parts(ChildObject* child);

// Readies the idiom's types (HistogramSum, HistogramBucket) and adds them to
// module. Returns -1 with an exception set on failure.
int add_idiom_types(PyObject* module);

}  // namespace tokenspeed::metrics::python
