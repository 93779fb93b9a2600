// native_arguments.hpp — reading the arguments of a METH_FASTCALL method of
// the handle types (positional or by keyword) without making a Python object.
// Touched with the GIL held. Internal to host/python/.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#pragma once

#include <Python.h>

#include <array>
#include <cstddef>

namespace tokenspeed::metrics::python {

// A float argument (int and float exact types take the fast path).
inline bool as_double(PyObject* object, double& out) {
  if (PyFloat_CheckExact(object)) {
    out = PyFloat_AS_DOUBLE(object);
    return true;
  }
  out = PyFloat_AsDouble(object);
  return !(out == -1.0 && PyErr_Occurred());
}

// One optional positional-or-keyword argument called name.
inline bool one_argument(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                         const char* name, PyObject*& out) {
  out = nullptr;
  if (nargs > 1) {
    PyErr_Format(PyExc_TypeError, "takes at most one argument (%zd given)", nargs);
    return false;
  }
  if (nargs == 1) out = args[0];
  if (kwnames != nullptr) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); ++i) {
      PyObject* key = PyTuple_GET_ITEM(kwnames, i);
      if (out != nullptr || PyUnicode_CompareWithASCIIString(key, name) != 0) {
        PyErr_Format(PyExc_TypeError, "unexpected keyword argument %R", key);
        return false;
      }
      out = args[nargs + i];
    }
  }
  return true;
}

// Positional-or-keyword arguments by name, as `def f(a, b=None)` takes
// them: out[i] stays null for one not given. A TypeError naming signature
// for more positionals than names, an unknown keyword or one given twice.
template <std::size_t N>
bool named_arguments(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     const std::array<const char*, N>& names, std::array<PyObject*, N>& out,
                     const char* signature) {
  out.fill(nullptr);
  if (nargs > static_cast<Py_ssize_t>(N)) {
    PyErr_Format(PyExc_TypeError, "%s takes at most %zu arguments", signature, N);
    return false;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) out[static_cast<std::size_t>(i)] = args[i];
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, k);
    std::size_t i = 0;
    while (i < N && PyUnicode_CompareWithASCIIString(key, names[i]) != 0) ++i;
    if (i == N || out[i] != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s: unexpected keyword argument %R", signature, key);
      return false;
    }
    out[i] = args[nargs + k];
  }
  return true;
}

}  // namespace tokenspeed::metrics::python
