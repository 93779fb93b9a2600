// native_handles.hpp — the Python types of metric families and their
// children (one series each). Children are what the hot path calls; a
// family's labels() finds them without a Python frame: the child of the
// previous call when the call repeats it, otherwise by label values.
// Touched with the GIL held; nothing here releases it.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#pragma once

#include <Python.h>

#include <cstdint>

#include <tokenspeed/metrics/metrics.hpp>

#include "native_state.hpp"

namespace tokenspeed::metrics::python {

// The most arguments of a labels() call the family remembers: a call with
// more finds its child by label values every time.
inline constexpr Py_ssize_t kRememberedArguments = 8;

struct FamilyObject {
  PyObject_HEAD MetricDefinition* definition;  // checked; owned
  void* native;  // CounterFamily*, GaugeFamily* or HistogramFamily* (histograms, summaries)
  std::uint64_t generation;  // of native
  PyObject* children;        // dict: tuple of str label values (labelnames' order) -> child
  PyObject* labelnames;      // tuple of str, the host's order
  // What labels() makes: the kind's child type, or the subclass that
  // _set_child_class gave (tokenspeed_metrics.prometheus_client's children).
  PyTypeObject* child_type;
  // The names in the order positional labels() takes the values, when it
  // differs from labelnames (a set's names go to the host sorted); else null.
  PyObject* caller_names;
  PyObject* upper_bounds;  // histograms: list of the bounds and +Inf, made on first use
  // The previous labels() call and its child: the keyword names (exact str)
  // and values (of immutable types: str(), hence the child, cannot differ
  // while they are held), compared by identity. Null last_child: none.
  PyObject* last_child;
  Py_ssize_t last_nargs;
  Py_ssize_t last_nkw;
  PyObject* last_names[kRememberedArguments];
  PyObject* last_values[kRememberedArguments];
};

struct ChildObject {
  PyObject_HEAD FamilyObject* family;  // strong reference
  PyObject* values;                    // tuple of str, labelnames' order
  std::uint64_t generation;
  Counter counter;
  Gauge gauge;
  Histogram histogram;
  // Histograms of tokenspeed_metrics.prometheus_client (null otherwise):
  // the batched idiom's _sum, the tuple of _buckets[i] (native_idiom) and
  // the family's list of bounds with +Inf.
  PyObject* idiom_sum;
  PyObject* idiom_buckets;
  PyObject* upper_bounds;
};

// Binds the child's handle to this process's Recorder (after start, attach
// or a fork). False with a Python exception set when there is none, or
// after close (ClosedError).
bool bind_child(ChildObject* child);

// Binds handle to the series of values (a tuple of str) of a histogram or
// summary family, as bind_child does for a child's.
bool bind_histogram(FamilyObject* family, PyObject* values, Histogram& handle);

// True when the child records into this process's current binding, binding
// it first when the generation moved.
inline bool child_ready(ChildObject* child) {
  return child->generation == binding_generation || bind_child(child);
}

// Adds CounterFamily, GaugeFamily, HistogramFamily and their child types to
// module. Returns -1 with an exception set on failure.
int add_handle_types(PyObject* module);

}  // namespace tokenspeed::metrics::python
