// native_histogram.cpp — what a histogram's or a summary's child and family
// record with (the hot path), written against the CPython C API with METH_FASTCALL: a call
// parses its arguments, checks the binding generation and calls the host's
// handle; it allocates no Python object and never releases the GIL (the work
// is tens of nanoseconds, less than releasing it would cost).
// Also the bounds with +Inf and the batched idiom's fields a histogram child of
// tokenspeed_metrics.prometheus_client shows.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "native_arguments.hpp"
#include "native_handle_parts.hpp"

namespace tokenspeed::metrics::python {
namespace {

bool weight_of(PyObject* object, std::uint64_t& weight) {
  const unsigned long long value = PyLong_AsUnsignedLongLong(object);
  if (value == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
    PyErr_SetString(PyExc_ValueError, "weight must be a non-negative integer");
    return false;
  }
  weight = value;
  return true;
}

// observe(amount, weight=1, exemplar=None): exemplars are accepted and
// dropped, as prometheus_client's multiprocess mode drops them.
PyObject* histogram_observe(ChildObject* self, PyObject* const* args, Py_ssize_t nargs,
                            PyObject* kwnames) {
  PyObject* amount = nullptr;
  PyObject* weight_arg = nullptr;
  if (nargs == 1 && kwnames == nullptr) {
    amount = args[0];
  } else {
    std::array<PyObject*, 3> given;
    if (!named_arguments(args, nargs, kwnames, std::array{"amount", "weight", "exemplar"}, given,
                         "observe(amount, weight=1, exemplar=None)")) {
      return nullptr;
    }
    amount = given[0];
    weight_arg = given[1];
  }
  if (amount == nullptr) {
    PyErr_SetString(PyExc_TypeError, "observe() missing its amount");
    return nullptr;
  }
  double value = 0.0;
  std::uint64_t weight = 1;
  if (!as_double(amount, value)) return nullptr;
  if (weight_arg != nullptr && !weight_of(weight_arg, weight)) return nullptr;
  if (!child_ready(self)) return nullptr;
  self->histogram.observe(value, weight);
  Py_RETURN_NONE;
}

// observe_total(total, weight): weight samples adding up to total, the sum
// growing by total exactly (one interval measured for weight tokens).
PyObject* histogram_observe_total(ChildObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2) {
    PyErr_SetString(PyExc_TypeError, "observe_total(total, weight)");
    return nullptr;
  }
  double total = 0.0;
  std::uint64_t weight = 1;
  if (!as_double(args[0], total) || !weight_of(args[1], weight)) return nullptr;
  if (!child_ready(self)) return nullptr;
  self->histogram.observe_total(total, weight);
  Py_RETURN_NONE;
}

// observe_many(values): every value of a sequence (or a buffer of doubles:
// array('d'), a NumPy float64 array) once, in one call.
PyObject* histogram_observe_many(ChildObject* self, PyObject* values) {
  if (!child_ready(self)) return nullptr;
  if (PyObject_CheckBuffer(values)) {
    Py_buffer view;
    if (PyObject_GetBuffer(values, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) == 0) {
      const bool doubles = view.itemsize == sizeof(double) && view.format != nullptr &&
                           std::string_view(view.format) == "d";
      if (doubles) {
        self->histogram.observe_each(
            std::span<const double>(static_cast<const double*>(view.buf),
                                    static_cast<std::size_t>(view.len) / sizeof(double)));
      }
      PyBuffer_Release(&view);
      if (doubles) Py_RETURN_NONE;
    } else {
      PyErr_Clear();
    }
  }
  PyObject* fast = PySequence_Fast(values, "observe_many() takes a sequence of numbers");
  if (fast == nullptr) return nullptr;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  PyObject** items = PySequence_Fast_ITEMS(fast);
  // Converted a chunk at a time, then recorded together (one atomic add per
  // bucket and chunk): nothing is recorded before the whole chunk converted.
  std::array<double, 256> chunk;
  for (Py_ssize_t begin = 0; begin < n; begin += static_cast<Py_ssize_t>(chunk.size())) {
    const Py_ssize_t end = std::min(n, begin + static_cast<Py_ssize_t>(chunk.size()));
    for (Py_ssize_t i = begin; i < end; ++i) {
      if (!as_double(items[i], chunk[static_cast<std::size_t>(i - begin)])) {
        Py_DECREF(fast);
        return nullptr;
      }
    }
    self->histogram.observe_each(
        std::span<const double>(chunk.data(), static_cast<std::size_t>(end - begin)));
  }
  Py_DECREF(fast);
  Py_RETURN_NONE;
}

// (count of bucket 0, ..., count of +Inf): not cumulative.
PyObject* histogram_bucket_counts(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  const std::size_t n = shown_bounds(self->family).size();
  PyObject* counts = PyTuple_New(static_cast<Py_ssize_t>(n + 1));
  if (counts == nullptr) return nullptr;
  for (std::size_t i = 0; i <= n; ++i) {
    PyObject* count = PyFloat_FromDouble(self->histogram.bucket_count(i));
    if (count == nullptr) {
      Py_DECREF(counts);
      return nullptr;
    }
    PyTuple_SET_ITEM(counts, static_cast<Py_ssize_t>(i), count);
  }
  return counts;
}

PyObject* histogram_sum(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  return PyFloat_FromDouble(self->histogram.sum());
}

// The unlabelled child's observe_total (its arguments are positional only).
PyObject* family_observe_total(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  PyObject* child = unlabelled_child(self);
  if (child == nullptr) return nullptr;
  PyObject* result = histogram_observe_total(reinterpret_cast<ChildObject*>(child), args, nargs);
  Py_DECREF(child);
  return result;
}

PyObject* family_observe_many(FamilyObject* self, PyObject* values) {
  PyObject* child = unlabelled_child(self);
  if (child == nullptr) return nullptr;
  PyObject* result = histogram_observe_many(reinterpret_cast<ChildObject*>(child), values);
  Py_DECREF(child);
  return result;
}

}  // namespace

PyMethodDef histogram_child_methods[] = {
    {"observe", FASTCALL_KW(histogram_observe), METH_FASTCALL | METH_KEYWORDS,
     "observe(amount, weight=1): weight samples of amount"},
    {"observe_many", reinterpret_cast<PyCFunction>(histogram_observe_many), METH_O,
     "observe_many(values): each value once"},
    {"observe_total", FASTCALL_KW(histogram_observe_total), METH_FASTCALL,
     "observe_total(total, weight): weight samples adding up to total"},
    {"bucket_counts", reinterpret_cast<PyCFunction>(histogram_bucket_counts), METH_NOARGS,
     "bucket_counts(): this process's count per bucket, +Inf last, not cumulative"},
    {"sum", reinterpret_cast<PyCFunction>(histogram_sum), METH_NOARGS, "sum(): this process's sum"},
    {nullptr, nullptr, 0, nullptr}};

const std::vector<double>& shown_bounds(const FamilyObject* family) {
  if (family->native != nullptr && family->generation == binding_generation) {
    return static_cast<const HistogramFamily*>(family->native)->definition().buckets;
  }
  return family->definition->buckets;
}

bool same_bounds(PyObject* list, const std::vector<double>& bounds) {
  if (list == nullptr || PyList_GET_SIZE(list) != static_cast<Py_ssize_t>(bounds.size() + 1)) {
    return false;
  }
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    if (PyFloat_AS_DOUBLE(PyList_GET_ITEM(list, static_cast<Py_ssize_t>(i))) != bounds[i]) {
      return false;
    }
  }
  return true;
}

// The shown bounds with +Inf, one list for every child (made again only
// when a view gives other bounds than the list has).
PyObject* family_upper_bounds(FamilyObject* family) {
  const std::vector<double>& buckets = shown_bounds(family);
  if (!same_bounds(family->upper_bounds, buckets)) {
    PyObject* bounds = PyList_New(static_cast<Py_ssize_t>(buckets.size() + 1));
    if (bounds == nullptr) return nullptr;
    for (std::size_t i = 0; i <= buckets.size(); ++i) {
      PyObject* bound = PyFloat_FromDouble(i < buckets.size() ? buckets[i] : INFINITY);
      if (bound == nullptr) {
        Py_DECREF(bounds);
        return nullptr;
      }
      PyList_SET_ITEM(bounds, static_cast<Py_ssize_t>(i), bound);
    }
    Py_XSETREF(family->upper_bounds, bounds);
  }
  return family->upper_bounds;
}

// A histogram child of tokenspeed_metrics.prometheus_client has the
// batched idiom's parts (native_idiom) as prometheus_client's child has
// them, as plain fields: reading one is a load the interpreter specialises.
PyMemberDef histogram_child_members[] = {
    {"_sum", T_OBJECT_EX, offsetof(ChildObject, idiom_sum), READONLY,
     "the batched idiom's _sum: inc(total) opens a batch, get() reads the sum"},
    {"_buckets", T_OBJECT_EX, offsetof(ChildObject, idiom_buckets), READONLY,
     "the batched idiom's buckets: _buckets[i].inc(n) closes the batch, get() reads bucket i "
     "(not cumulative)"},
    {"_upper_bounds", T_OBJECT_EX, offsetof(ChildObject, upper_bounds), READONLY,
     "the bucket bounds with +Inf (a list)"},
    {nullptr, 0, 0, 0, nullptr}};

PyMethodDef histogram_family_methods[] = {
    {"labels", FASTCALL_KW(family_labels), METH_FASTCALL | METH_KEYWORDS, "labels(*values)"},
    {"observe", FASTCALL_KW(forward_fastcall<histogram_observe>), METH_FASTCALL | METH_KEYWORDS,
     "observe(amount, weight=1)"},
    {"observe_many", reinterpret_cast<PyCFunction>(family_observe_many), METH_O,
     "observe_many(values)"},
    {"observe_total", FASTCALL_KW(family_observe_total), METH_FASTCALL,
     "observe_total(total, weight)"},
    {"bucket_counts", reinterpret_cast<PyCFunction>(forward_noargs<histogram_bucket_counts>),
     METH_NOARGS, "bucket_counts(): this process's count per bucket, +Inf last"},
    {"sum", reinterpret_cast<PyCFunction>(forward_noargs<histogram_sum>), METH_NOARGS,
     "sum(): this process's sum"},
    COMPAT_FAMILY_METHODS,
    {nullptr, nullptr, 0, nullptr}};

}  // namespace tokenspeed::metrics::python
