// native_counter.cpp — what a counter's child and family record with (the
// hot path), written against the CPython C API with METH_FASTCALL: a call
// parses its arguments, checks the binding generation and calls the host's
// handle; it allocates no Python object and never releases the GIL (the work
// is tens of nanoseconds, less than releasing it would cost).
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#include <array>

#include "native_arguments.hpp"
#include "native_handle_parts.hpp"

namespace tokenspeed::metrics::python {
namespace {

// inc(amount=1, exemplar=None): exemplars are accepted and dropped, as
// prometheus_client's multiprocess mode drops them.
PyObject* counter_inc(ChildObject* self, PyObject* const* args, Py_ssize_t nargs,
                      PyObject* kwnames) {
  double amount = 1.0;
  if (nargs == 1 && kwnames == nullptr) {
    if (!as_double(args[0], amount)) return nullptr;
  } else if (nargs != 0 || kwnames != nullptr) {
    std::array<PyObject*, 2> given;
    if (!named_arguments(args, nargs, kwnames, std::array{"amount", "exemplar"}, given,
                         "inc(amount=1, exemplar=None)")) {
      return nullptr;
    }
    if (given[0] != nullptr && !as_double(given[0], amount)) return nullptr;
  }
  if (!(amount >= 0.0)) {
    PyErr_SetString(PyExc_ValueError, "Counters can only be incremented by non-negative amounts.");
    return nullptr;
  }
  if (!child_ready(self)) return nullptr;
  self->counter.inc(amount);
  Py_RETURN_NONE;
}

// This process's own figures of a series (prometheus_client's _value.get()
// in multiprocess mode); /metrics merges every process's.
PyObject* counter_get(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  return PyFloat_FromDouble(self->counter.value());
}

}  // namespace

PyMethodDef counter_child_methods[] = {
    {"inc", FASTCALL_KW(counter_inc), METH_FASTCALL | METH_KEYWORDS,
     "inc(amount=1, exemplar=None)"},
    {"get", reinterpret_cast<PyCFunction>(counter_get), METH_NOARGS,
     "get(): what this process has counted"},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef counter_family_methods[] = {
    {"labels", FASTCALL_KW(family_labels), METH_FASTCALL | METH_KEYWORDS,
     "labels(*values) or labels(**values): the child of that series"},
    {"inc", FASTCALL_KW(forward_fastcall<counter_inc>), METH_FASTCALL | METH_KEYWORDS,
     "inc(amount=1, exemplar=None)"},
    {"get", reinterpret_cast<PyCFunction>(forward_noargs<counter_get>), METH_NOARGS,
     "get(): what this process has counted"},
    COMPAT_FAMILY_METHODS,
    {nullptr, nullptr, 0, nullptr}};

}  // namespace tokenspeed::metrics::python
