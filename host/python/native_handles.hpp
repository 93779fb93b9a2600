// native_handles.hpp — the Python types of metric families and their
// children (one series each). Children are what the hot path calls.
// Tested in test/python/test_tokenspeed_metrics.py.
#pragma once

#include <Python.h>

namespace tokenspeed::metrics::python {

// Adds CounterFamily, GaugeFamily, HistogramFamily and their child types to
// module. Returns -1 with an exception set on failure.
int add_handle_types(PyObject* module);

}  // namespace tokenspeed::metrics::python
