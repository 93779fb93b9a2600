// native_labels.cpp — a family's labels(): the child of a label set without
// a Python frame. A call that repeats the previous one returns that call's
// child after comparing the arguments by identity (no hashing, no str());
// another finds its child by the label values as str. Touched with the GIL held.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#include <array>
#include <cstddef>

#include "native_handle_parts.hpp"

namespace tokenspeed::metrics::python {
namespace {

// A value whose str() cannot change while a reference to it is held: the
// last call may be recognised by the identity of such values.
inline bool immutable_value(PyObject* value) {
  return PyUnicode_CheckExact(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
         PyBool_Check(value) || value == Py_None;
}

}  // namespace

// Drops the remembered call (after remove() or clear(), or to remember
// another). The references go after the fields are cleared: no Python code
// (str, int, float, a child's dealloc run none) sees a half-cleared cache.
void forget_last_call(FamilyObject* family) {
  PyObject* child = family->last_child;
  if (child == nullptr) return;
  std::array<PyObject*, 2 * kRememberedArguments> held{};
  std::size_t n = 0;
  for (Py_ssize_t i = 0; i < family->last_nkw; ++i) held[n++] = family->last_names[i];
  for (Py_ssize_t i = 0; i < family->last_nargs + family->last_nkw; ++i) {
    held[n++] = family->last_values[i];
  }
  family->last_child = nullptr;
  family->last_nargs = family->last_nkw = 0;
  for (std::size_t i = 0; i < n; ++i) Py_DECREF(held[i]);
  Py_DECREF(child);
}

namespace {

// Remembers a call and its child when its arguments allow it (exact str
// names, immutable values, no more than kRememberedArguments).
void remember_last_call(FamilyObject* family, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames, PyObject* child) {
  forget_last_call(family);
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs + nkw > kRememberedArguments) return;
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    if (!PyUnicode_CheckExact(PyTuple_GET_ITEM(kwnames, k))) return;
  }
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) {
    if (!immutable_value(args[i])) return;
  }
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    family->last_names[k] = Py_NewRef(PyTuple_GET_ITEM(kwnames, k));
  }
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) family->last_values[i] = Py_NewRef(args[i]);
  family->last_nargs = nargs;
  family->last_nkw = nkw;
  family->last_child = Py_NewRef(child);
}

// True when this call passes the very objects of the remembered one, in the
// same places (the same dict of labels gives the same key objects in the
// same order, and its values unless one was replaced).
inline bool repeats_last_call(const FamilyObject* family, PyObject* const* args, Py_ssize_t nargs,
                              PyObject* kwnames) {
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  if (family->last_child == nullptr || family->last_nargs != nargs || family->last_nkw != nkw) {
    return false;
  }
  for (Py_ssize_t k = 0; k < nkw; ++k) {
    if (PyTuple_GET_ITEM(kwnames, k) != family->last_names[k]) return false;
  }
  for (Py_ssize_t i = 0; i < nargs + nkw; ++i) {
    if (args[i] != family->last_values[i]) return false;
  }
  return true;
}

// str(value), as prometheus_client makes a label value.
inline PyObject* label_text(PyObject* value) {
  return PyUnicode_CheckExact(value) ? Py_NewRef(value) : PyObject_Str(value);
}

// The key of a labels() call: its values as str in labelnames' order, or
// null with prometheus_client's ValueError.
PyObject* label_key(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs,
                    PyObject* kwnames) {
  if (!initialised(self)) return nullptr;
  const Py_ssize_t expected = PyTuple_GET_SIZE(self->labelnames);
  if (expected == 0) {
    if (is_compat_family(self)) {
      PyErr_Format(PyExc_ValueError, "No label names were set when constructing %S", self);
    } else {
      PyErr_SetString(PyExc_ValueError, "No label names were set when constructing this metric");
    }
    return nullptr;
  }
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs != 0 && nkw != 0) {
    PyErr_SetString(PyExc_ValueError, "Can't pass both *args and **kwargs");
    return nullptr;
  }
  if (nkw != 0 ? nkw != expected : nargs != expected) {
    PyErr_SetString(PyExc_ValueError, nkw != 0 ? "Incorrect label names" : "Incorrect label count");
    return nullptr;
  }
  PyObject* key = PyTuple_New(expected);
  if (key == nullptr) return nullptr;
  for (Py_ssize_t i = 0; i < expected; ++i) {
    PyObject* wanted = PyTuple_GET_ITEM(self->labelnames, i);
    PyObject* value = nullptr;
    if (nkw != 0) {
      for (Py_ssize_t k = 0; k < nkw && value == nullptr; ++k) {
        if (same_name(PyTuple_GET_ITEM(kwnames, k), wanted)) value = args[k];
      }
      if (value == nullptr) {
        Py_DECREF(key);
        PyErr_SetString(PyExc_ValueError, "Incorrect label names");
        return nullptr;
      }
    } else if (self->caller_names == nullptr) {
      value = args[i];
    } else {  // the caller's order differs: the value of the same name
      for (Py_ssize_t j = 0; j < expected && value == nullptr; ++j) {
        if (same_name(PyTuple_GET_ITEM(self->caller_names, j), wanted)) value = args[j];
      }
    }
    PyObject* text = value != nullptr ? label_text(value) : nullptr;
    if (text == nullptr) {
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "Incorrect label names");
      Py_DECREF(key);
      return nullptr;
    }
    PyTuple_SET_ITEM(key, i, text);
  }
  return key;
}

// The child of key, cached in the family unless the host refused its series
// or gave it the family's overflow series; kept says which.
PyObject* child_of(FamilyObject* family, PyObject* key, bool& kept) {
  kept = true;
  PyObject* found = PyDict_GetItemWithError(family->children, key);
  if (found != nullptr) return Py_NewRef(found);
  if (PyErr_Occurred()) return nullptr;
  ChildObject* child = make_child(family, key);
  if (child == nullptr) return nullptr;
  if (!bind_child(child)) {
    Py_DECREF(child);
    return nullptr;
  }
  if (series_refused(child) || series_overflowed(child)) {
    kept = false;
    return reinterpret_cast<PyObject*>(child);
  }
  // Another thread may have made it meanwhile (making one can run Python
  // code): the first one stays.
  PyObject* cached = PyDict_SetDefault(family->children, key, reinterpret_cast<PyObject*>(child));
  Py_DECREF(child);
  return cached != nullptr ? Py_NewRef(cached) : nullptr;
}

}  // namespace

// labels(*values) or labels(**values), prometheus_client's: the child of
// that series. A call that repeats the previous one returns its child at
// once.
PyObject* family_labels(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames) {
  if (repeats_last_call(self, args, nargs, kwnames)) return Py_NewRef(self->last_child);
  PyObject* key = label_key(self, args, nargs, kwnames);
  if (key == nullptr) return nullptr;
  bool kept = true;
  PyObject* child = child_of(self, key, kept);
  Py_DECREF(key);
  if (child != nullptr && kept) remember_last_call(self, args, nargs, kwnames, child);
  return child;
}

}  // namespace tokenspeed::metrics::python
