// native_families.cpp — the family type of every kind: __init__ (the
// definition checked by the host), garbage collection, its getters, the child
// of a family without labels, and what tokenspeed_metrics.prometheus_client's
// families use of their base (_set_child_class, _forget_child). Never on the
// hot path but for the unlabelled child. Touched with the GIL held.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_native_labels_and_idiom.py.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "native_arguments.hpp"
#include "native_handle_parts.hpp"

namespace tokenspeed::metrics::python {

// --------------------------------------------------------------- families

// False with TypeError for a family whose __init__ has not run.
bool initialised(const FamilyObject* family) {
  if (family->definition != nullptr && family->labelnames != nullptr &&
      family->children != nullptr) {
    return true;
  }
  PyErr_SetString(PyExc_TypeError, "the metric family's __init__ has not run");
  return false;
}

// True for a family of tokenspeed_metrics.prometheus_client (its children
// are a subclass of the kind's child type).
bool is_compat_family(const FamilyObject* family) {
  return family->child_type != nullptr &&
         family->child_type != child_type_of(family->definition->kind);
}

// The child of a family without labels, for family.inc() and the like:
// made once and kept, unbound until it records (its one series is the
// family's, whatever the bound on series).
PyObject* unlabelled_child(FamilyObject* self) {
  if (!initialised(self)) return nullptr;
  if (PyTuple_GET_SIZE(self->labelnames) != 0) {
    PyErr_Format(PyExc_ValueError, "%s metric is missing label values",
                 std::string(to_string(self->definition->kind)).c_str());
    return nullptr;
  }
  PyObject* empty = PyTuple_New(0);
  if (empty == nullptr) return nullptr;
  PyObject* found = PyDict_GetItemWithError(self->children, empty);
  if (found != nullptr || PyErr_Occurred()) {
    Py_DECREF(empty);
    return found != nullptr ? Py_NewRef(found) : nullptr;
  }
  ChildObject* child = make_child(self, empty);
  PyObject* cached = child != nullptr ? PyDict_SetDefault(self->children, empty,
                                                          reinterpret_cast<PyObject*>(child))
                                      : nullptr;
  Py_XDECREF(child);
  Py_DECREF(empty);
  return cached != nullptr ? Py_NewRef(cached) : nullptr;
}

PyObject* family_unlabelled(FamilyObject* self, PyObject*) { return unlabelled_child(self); }

// _set_child_class(child_class, caller_names): labels() makes child_class
// (a subclass of this kind's child type) from now on; caller_names is the
// order of positional label values (labelnames in another order, or None).
PyObject* family_set_child_class(FamilyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyType_Check(args[0])) {
    PyErr_SetString(PyExc_TypeError, "_set_child_class(child_class, caller_names)");
    return nullptr;
  }
  auto* type = reinterpret_cast<PyTypeObject*>(args[0]);
  if (self->definition == nullptr ||
      !PyType_IsSubtype(type, child_type_of(self->definition->kind))) {
    PyErr_SetString(PyExc_TypeError, "the child class must derive from this family's child type");
    return nullptr;
  }
  if (self->children == nullptr || PyDict_GET_SIZE(self->children) != 0) {
    PyErr_SetString(PyExc_ValueError, "_set_child_class() comes before the first labels()");
    return nullptr;
  }
  PyObject* caller_names = args[1] != Py_None ? PySequence_Tuple(args[1]) : nullptr;
  if (args[1] != Py_None) {
    if (caller_names == nullptr) return nullptr;
    const Py_ssize_t n = PyTuple_GET_SIZE(self->labelnames);
    bool permutation = PyTuple_GET_SIZE(caller_names) == n;
    bool same_order = permutation;
    for (Py_ssize_t i = 0; i < n && permutation; ++i) {
      PyObject* name = PyTuple_GET_ITEM(self->labelnames, i);
      bool found = false;
      for (Py_ssize_t j = 0; j < n && !found; ++j) {
        PyObject* other = PyTuple_GET_ITEM(caller_names, j);
        found = PyUnicode_Check(other) && same_name(other, name);
        same_order = same_order && (!found || i == j);
      }
      permutation = found;
    }
    if (!permutation) {
      Py_DECREF(caller_names);
      PyErr_SetString(PyExc_ValueError, "caller_names must be the family's label names");
      return nullptr;
    }
    if (same_order) Py_CLEAR(caller_names);
  }
  Py_INCREF(type);
  Py_XSETREF(self->child_type, type);
  Py_XSETREF(self->caller_names, caller_names);
  forget_last_call(self);
  Py_RETURN_NONE;
}

// _forget_child(values): drops the cached child of those label values (in
// labelnames' order, str); False when there was none.
PyObject* family_forget_child(FamilyObject* self, PyObject* key) {
  if (self->children == nullptr) Py_RETURN_FALSE;
  forget_last_call(self);
  if (PyDict_GetItemWithError(self->children, key) == nullptr) {
    if (PyErr_Occurred()) return nullptr;
    Py_RETURN_FALSE;
  }
  if (PyDict_DelItem(self->children, key) != 0) return nullptr;
  Py_RETURN_TRUE;
}

// _forget_children(): drops every cached child.
PyObject* family_forget_children(FamilyObject* self, PyObject*) {
  forget_last_call(self);
  if (self->children != nullptr) PyDict_Clear(self->children);
  Py_RETURN_NONE;
}

namespace {

PyObject* family_children(FamilyObject* self, void*) {
  if (self->children == nullptr) return PyDict_New();
  return Py_NewRef(self->children);
}

// The arguments of a family's __init__, as parsed (the objects borrowed).
struct FamilyArguments {
  const char* name = nullptr;
  const char* documentation = nullptr;
  PyObject* labelnames = nullptr;
  const char* unit = "";
  PyObject* buckets = Py_None;
  const char* mode = "livemax";
  int native = 0;
  ExponentialHistogramOptions exponential;
};

// __init__(name, documentation, labelnames, unit, buckets, multiprocess_mode,
//          *, native, native_max_buckets, native_max_scale, native_zero_threshold)
// native=True: exponential buckets (MetricDefinition::exponential).
bool parse_family_arguments(PyObject* args, PyObject* kwargs, FamilyArguments& out) {
  static const char* keywords[] = {"name",
                                   "documentation",
                                   "labelnames",
                                   "unit",
                                   "buckets",
                                   "multiprocess_mode",
                                   "native",
                                   "native_max_buckets",
                                   "native_max_scale",
                                   "native_zero_threshold",
                                   nullptr};
  long long max_buckets = out.exponential.max_buckets;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ss|OsOs$pLid", const_cast<char**>(keywords),
                                   &out.name, &out.documentation, &out.labelnames, &out.unit,
                                   &out.buckets, &out.mode, &out.native, &max_buckets,
                                   &out.exponential.max_scale, &out.exponential.zero_threshold)) {
    return false;
  }
  // Checked before the narrowing to the options' 32 bits.
  if (max_buckets < 0 || max_buckets > kMaxExponentialBuckets) {
    PyErr_Format(PyExc_ValueError,
                 "metric %s: native_max_buckets must be between %u and %u, got %lld", out.name,
                 kMinExponentialBuckets, kMaxExponentialBuckets, max_buckets);
    return false;
  }
  out.exponential.max_buckets = static_cast<std::uint32_t>(max_buckets);
  return true;
}

// names: a tuple; false with the error set when one is no str.
bool read_label_names(PyObject* names, std::vector<std::string>& out) {
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    const char* label = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
    if (label == nullptr) return false;
    out.emplace_back(label);
  }
  return true;
}

// buckets: a sequence of numbers; false with the error set when it is not.
bool read_buckets(PyObject* buckets, std::vector<double>& out) {
  PyObject* fast = PySequence_Fast(buckets, "buckets must be a sequence of numbers");
  if (fast == nullptr) return false;
  bool read = true;
  for (Py_ssize_t i = 0; read && i < PySequence_Fast_GET_SIZE(fast); ++i) {
    double bound = 0.0;
    read = as_double(PySequence_Fast_GET_ITEM(fast, i), bound);
    if (read) out.push_back(bound);
  }
  Py_DECREF(fast);
  return read;
}

// The definition the arguments describe, not yet checked by the host; false
// with the error set when a label name, bound or gauge mode is unreadable.
// names: the label names as a tuple.
bool definition_of(MetricKind kind, const FamilyArguments& arguments, PyObject* names,
                   MetricDefinition& definition) {
  if (arguments.native) definition.exponential = arguments.exponential;
  definition.name = arguments.name;
  definition.kind = kind;
  definition.help = arguments.documentation;
  definition.unit = arguments.unit;
  if (!read_label_names(names, definition.label_names)) return false;
  if (arguments.buckets != Py_None && !read_buckets(arguments.buckets, definition.buckets))
    return false;
  if (!gauge_mode_from_string(arguments.mode, definition.gauge_mode)) {
    PyErr_Format(PyExc_ValueError, "Invalid multiprocess mode: %s", arguments.mode);
    return false;
  }
  return true;
}

// The family takes the definition as the host checks it; false with the
// host's error raised when the host refuses it.
bool set_checked_definition(FamilyObject* self, MetricDefinition definition) {
  try {
    auto checked = std::make_unique<MetricDefinition>(checked_definition(std::move(definition)));
    delete self->definition;
    self->definition = checked.release();
    return true;
  } catch (...) {
    raise_from_cpp();
    return false;
  }
}

template <MetricKind Kind>
int family_init(FamilyObject* self, PyObject* args, PyObject* kwargs) {
  FamilyArguments arguments;
  if (!parse_family_arguments(args, kwargs, arguments)) return -1;
  PyObject* names =
      PySequence_Tuple(arguments.labelnames != nullptr ? arguments.labelnames : PyTuple_New(0));
  if (names == nullptr) return -1;
  MetricDefinition definition;
  if (!definition_of(Kind, arguments, names, definition) ||
      !set_checked_definition(self, std::move(definition))) {
    Py_DECREF(names);
    return -1;
  }
  Py_XSETREF(self->labelnames, names);
  if (self->children == nullptr) self->children = PyDict_New();
  if (self->children == nullptr) return -1;
  // Another definition: what was cached of the previous one goes.
  Py_CLEAR(self->upper_bounds);
  forget_last_call(self);
  self->native = nullptr;
  self->generation = 0;
  return 0;
}

PyObject* family_new(PyTypeObject* type, PyObject*, PyObject*) {
  // tp_alloc zeroes every field: no definition, children, cache.
  return type->tp_alloc(type, 0);
}

int family_clear(FamilyObject* self) {
  forget_last_call(self);
  Py_CLEAR(self->children);
  Py_CLEAR(self->child_type);
  Py_CLEAR(self->caller_names);
  Py_CLEAR(self->upper_bounds);
  return 0;
}

void family_dealloc(FamilyObject* self) {
  PyObject_GC_UnTrack(self);
  family_clear(self);
  Py_CLEAR(self->labelnames);
  delete self->definition;
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

int family_traverse(FamilyObject* self, visitproc visit, void* arg) {
  Py_VISIT(self->children);
  Py_VISIT(self->child_type);
  Py_VISIT(self->last_child);
  return 0;
}

PyObject* family_name(FamilyObject* self, void*) {
  if (self->definition == nullptr) Py_RETURN_NONE;
  return PyUnicode_FromString(self->definition->name.c_str());
}

PyObject* family_labelnames(FamilyObject* self, void*) {
  if (self->labelnames == nullptr) return PyTuple_New(0);
  Py_INCREF(self->labelnames);
  return self->labelnames;
}

PyGetSetDef family_getset[] = {
    {"name", reinterpret_cast<getter>(family_name), nullptr, "the family name", nullptr},
    {"labelnames", reinterpret_cast<getter>(family_labelnames), nullptr, "label names", nullptr},
    {"_exposed_name", reinterpret_cast<getter>(family_exposed_name), nullptr,
     "the name the host exposes the family by in this process (a view may rename it)", nullptr},
    {"_children", reinterpret_cast<getter>(family_children), nullptr,
     "the cached children: dict of label values (labelnames' order) to child", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

template <MetricKind Kind>
PyTypeObject make_family_type(const char* name, PyMethodDef* methods) {
  PyTypeObject type = blank_type();
  type.tp_name = name;
  type.tp_basicsize = sizeof(FamilyObject);
  type.tp_dealloc = reinterpret_cast<destructor>(family_dealloc);
  type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  type.tp_doc =
      "A metric family (the Python classes Counter, Gauge, Histogram, Summary derive from it).";
  type.tp_traverse = reinterpret_cast<traverseproc>(family_traverse);
  type.tp_clear = reinterpret_cast<inquiry>(family_clear);
  type.tp_methods = methods;
  type.tp_getset = family_getset;
  type.tp_init = reinterpret_cast<initproc>(family_init<Kind>);
  type.tp_new = family_new;
  return type;
}

}  // namespace

PyTypeObject counter_family_type = make_family_type<MetricKind::counter>(
    "tokenspeed_metrics._native.CounterFamily", counter_family_methods);
PyTypeObject gauge_family_type = make_family_type<MetricKind::gauge>(
    "tokenspeed_metrics._native.GaugeFamily", gauge_family_methods);
PyTypeObject histogram_family_type = make_family_type<MetricKind::histogram>(
    "tokenspeed_metrics._native.HistogramFamily", histogram_family_methods);
// A summary records as a histogram without buckets: the same methods.
PyTypeObject summary_family_type = make_family_type<MetricKind::summary>(
    "tokenspeed_metrics._native.SummaryFamily", histogram_family_methods);

}  // namespace tokenspeed::metrics::python
