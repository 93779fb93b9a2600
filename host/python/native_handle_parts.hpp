// native_handle_parts.hpp — what the files of the handle types share: the
// child type (native_handles.cpp), the family type (native_families.cpp),
// labels() and its cache (native_labels.cpp), and each kind's methods and
// method tables (native_counter.cpp, native_gauge.cpp, native_histogram.cpp).
// Touched with the GIL held. Internal to host/python/.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#pragma once

#include <Python.h>
#include <structmember.h>

#include <vector>

#include "native_handles.hpp"

namespace tokenspeed::metrics::python {

#define FASTCALL_KW(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

// The child type and the registration of the types (native_handles.cpp).
// A static type object: zeroed, with the reference a static object holds.
PyTypeObject blank_type();
PyTypeObject* child_type_of(MetricKind kind);
// A child of values, not bound yet (child_ready binds it).
ChildObject* make_child(FamilyObject* family, PyObject* values);
// True when the host refused the child's label set.
bool series_refused(const ChildObject* child);
// True when the child's label set records into its family's overflow series.
bool series_overflowed(const ChildObject* child);

// The family type (native_families.cpp).
// False with TypeError for a family whose __init__ has not run.
bool initialised(const FamilyObject* family);
// True for a family of tokenspeed_metrics.prometheus_client.
bool is_compat_family(const FamilyObject* family);
// The child of a family without labels, for family.inc() and the like.
PyObject* unlabelled_child(FamilyObject* self);
PyObject* family_unlabelled(FamilyObject* self, PyObject*);
// The family's name as the host exposes it in this process (a view may
// rename it): the getter _exposed_name.
PyObject* family_exposed_name(FamilyObject* self, void*);
PyObject* family_set_child_class(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs);
PyObject* family_forget_child(FamilyObject* self, PyObject* key);
PyObject* family_forget_children(FamilyObject* self, PyObject*);
extern PyTypeObject counter_family_type;
extern PyTypeObject gauge_family_type;
extern PyTypeObject histogram_family_type;
extern PyTypeObject summary_family_type;

// A family's method that its unlabelled child runs (each kind's family methods).
template <auto Method>
PyObject* forward_fastcall(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs,
                           PyObject* kwnames) {
  PyObject* child = unlabelled_child(self);
  if (child == nullptr) return nullptr;
  PyObject* result = Method(reinterpret_cast<ChildObject*>(child), args, nargs, kwnames);
  Py_DECREF(child);
  return result;
}

// The unlabelled child's method of no arguments (get, sum, bucket_counts).
template <PyObject* (*Method)(ChildObject*, PyObject*)>
PyObject* forward_noargs(FamilyObject* self, PyObject*) {
  PyObject* child = unlabelled_child(self);
  if (child == nullptr) return nullptr;
  PyObject* result = Method(reinterpret_cast<ChildObject*>(child), nullptr);
  Py_DECREF(child);
  return result;
}

// What tokenspeed_metrics.prometheus_client's families use of their base.
// clang-format off
#define COMPAT_FAMILY_METHODS                                                                  \
  {"_unlabelled", reinterpret_cast<PyCFunction>(family_unlabelled), METH_NOARGS,               \
   "_unlabelled(): the child of a family without labels"},                                     \
  {"_set_child_class", FASTCALL_KW(family_set_child_class), METH_FASTCALL,                     \
   "_set_child_class(child_class, caller_names): what labels() makes"},                        \
  {"_forget_child", reinterpret_cast<PyCFunction>(family_forget_child), METH_O,                \
   "_forget_child(values): drops the cached child of those label values"},                     \
  {"_forget_children", reinterpret_cast<PyCFunction>(family_forget_children), METH_NOARGS,     \
   "_forget_children(): drops every cached child"}
// clang-format on

// labels() and its cache (native_labels.cpp).
// Drops the remembered call (after remove() or clear(), or to remember another).
void forget_last_call(FamilyObject* family);
// labels(*values) or labels(**values), prometheus_client's.
PyObject* family_labels(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs,
                        PyObject* kwnames);
// True when the names are the same str, by identity first.
inline bool same_name(PyObject* a, PyObject* b) { return a == b || PyUnicode_Compare(a, b) == 0; }

// Each kind's methods of its children and of its families (native_counter.cpp,
// native_gauge.cpp, native_histogram.cpp; a summary has the histogram's).
extern PyMethodDef counter_child_methods[];
extern PyMethodDef counter_family_methods[];
extern PyMethodDef gauge_child_methods[];
extern PyMethodDef gauge_family_methods[];
extern PyMethodDef histogram_child_methods[];
extern PyMethodDef histogram_family_methods[];
extern PyMemberDef histogram_child_members[];
// The bounds a histogram's children show and read (_upper_bounds,
// _buckets, bucket_counts()): those the host records with once the family
// is bound in this binding (a view may have changed the engine's), else the
// engine's.
const std::vector<double>& shown_bounds(const FamilyObject* family);
// Whether list (the bounds with +Inf, or null) holds exactly bounds.
bool same_bounds(PyObject* list, const std::vector<double>& bounds);
// The shown bounds with +Inf, one list for every child: a borrowed
// reference, or null with an exception set.
PyObject* family_upper_bounds(FamilyObject* family);

}  // namespace tokenspeed::metrics::python
