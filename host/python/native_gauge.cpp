// native_gauge.cpp — what a gauge's child and family record with (the hot
// path), written against the CPython C API with METH_FASTCALL: a call
// parses its arguments, checks the binding generation and calls the host's
// handle; it allocates no Python object and never releases the GIL (the work
// is tens of nanoseconds, less than releasing it would cost).
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#include "native_arguments.hpp"
#include "native_handle_parts.hpp"

namespace tokenspeed::metrics::python {
namespace {

// Reads the optional argument amount (positional or by keyword) of inc and
// dec; amount keeps its default when it is not given.
bool optional_amount(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, double& amount) {
  if (nargs == 0 && kwnames == nullptr) return true;
  PyObject* value = nullptr;
  if (!one_argument(args, nargs, kwnames, "amount", value)) return false;
  return value == nullptr || as_double(value, amount);
}

PyObject* gauge_set(ChildObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* given = nullptr;
  if (nargs == 1 && kwnames == nullptr) {
    given = args[0];
  } else if (!one_argument(args, nargs, kwnames, "value", given)) {
    return nullptr;
  }
  if (given == nullptr) {
    PyErr_SetString(PyExc_TypeError, "set() takes exactly one argument (value)");
    return nullptr;
  }
  double value = 0.0;
  if (!as_double(given, value)) return nullptr;
  if (!child_ready(self)) return nullptr;
  self->gauge.set(value);
  Py_RETURN_NONE;
}

template <int Sign>
PyObject* gauge_add(ChildObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  double amount = 1.0;
  if (!optional_amount(args, nargs, kwnames, amount)) return nullptr;
  if (!child_ready(self)) return nullptr;
  self->gauge.inc(Sign * amount);
  Py_RETURN_NONE;
}

// This process's own figures of a series (prometheus_client's _value.get()
// in multiprocess mode); /metrics merges every process's.
PyObject* gauge_get(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  return PyFloat_FromDouble(self->gauge.value());
}

}  // namespace

PyMethodDef gauge_child_methods[] = {
    {"set", FASTCALL_KW(gauge_set), METH_FASTCALL | METH_KEYWORDS, "set(value)"},
    {"inc", FASTCALL_KW(gauge_add<1>), METH_FASTCALL | METH_KEYWORDS, "inc(amount=1)"},
    {"dec", FASTCALL_KW(gauge_add<-1>), METH_FASTCALL | METH_KEYWORDS, "dec(amount=1)"},
    {"get", reinterpret_cast<PyCFunction>(gauge_get), METH_NOARGS,
     "get(): this process's current value"},
    {nullptr, nullptr, 0, nullptr}};

PyMethodDef gauge_family_methods[] = {
    {"labels", FASTCALL_KW(family_labels), METH_FASTCALL | METH_KEYWORDS, "labels(*values)"},
    {"set", FASTCALL_KW(forward_fastcall<gauge_set>), METH_FASTCALL | METH_KEYWORDS, "set(value)"},
    {"inc", FASTCALL_KW(forward_fastcall<gauge_add<1>>), METH_FASTCALL | METH_KEYWORDS,
     "inc(amount=1)"},
    {"dec", FASTCALL_KW(forward_fastcall<gauge_add<-1>>), METH_FASTCALL | METH_KEYWORDS,
     "dec(amount=1)"},
    {"get", reinterpret_cast<PyCFunction>(forward_noargs<gauge_get>), METH_NOARGS,
     "get(): this process's current value"},
    COMPAT_FAMILY_METHODS,
    {nullptr, nullptr, 0, nullptr}};

}  // namespace tokenspeed::metrics::python
