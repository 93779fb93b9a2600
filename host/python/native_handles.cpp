// native_handles.cpp — the child type of every kind and the registration of
// the handle types: a child binds to this process's Recorder on first use and
// again after a fork or a new binding. What a child records with is each
// kind's (native_counter.cpp, native_gauge.cpp, native_histogram.cpp); the
// family type is native_families.cpp's and labels() native_labels.cpp's.
#include "native_handles.hpp"

#include <new>
#include <string_view>
#include <vector>

#include <structmember.h>

#include "native_handle_parts.hpp"
#include "native_idiom.hpp"

namespace tokenspeed::metrics::python {
namespace {

// ------------------------------------------------------------- binding

// Runs bind; a C++ exception becomes the Python exception it stands for
// (raise_from_cpp) and false.
template <typename Bind>
bool raising_on_failure(Bind&& bind) {
  try {
    bind();
    return true;
  } catch (...) {
    raise_from_cpp();
    return false;
  }
}

bool bind_family(FamilyObject* family) {
  if (family->generation == binding_generation && family->native != nullptr) return true;
  Recorder* recorder = current_recorder();
  if (recorder == nullptr) return false;
  const bool bound = raising_on_failure([&] {
    switch (family->definition->kind) {
      case MetricKind::counter:
        family->native = &recorder->counter(*family->definition);
        break;
      case MetricKind::gauge:
        family->native = &recorder->gauge(*family->definition);
        break;
      case MetricKind::histogram:
        family->native = &recorder->histogram(*family->definition);
        break;
      case MetricKind::summary:
        family->native = &recorder->summary(*family->definition);
        break;
    }
  });
  if (bound) family->generation = binding_generation;
  return bound;
}

// The label values as views into their str objects (valid while values
// lives); false with a Python exception set.
bool label_views(PyObject* values, std::vector<std::string_view>& views) {
  const Py_ssize_t n = PyTuple_GET_SIZE(values);
  views.reserve(static_cast<std::size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    Py_ssize_t size = 0;
    const char* text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(values, i), &size);
    if (text == nullptr) return false;
    views.emplace_back(text, static_cast<std::size_t>(size));
  }
  return true;
}

}  // namespace

bool bind_histogram(FamilyObject* family, PyObject* values, Histogram& handle) {
  std::vector<std::string_view> views;
  if (!bind_family(family) || !label_views(values, views)) return false;
  return raising_on_failure(
      [&] { handle = static_cast<HistogramFamily*>(family->native)->labels(views); });
}

namespace {

// A histogram child of tokenspeed_metrics.prometheus_client shows the
// bounds its series records with: its _upper_bounds and its idiom's parts
// are made again when they have other bounds (made before the family was
// bound, or bound again under other views).
bool show_recorded_bounds(ChildObject* child) {
  PyObject* bounds = family_upper_bounds(child->family);
  if (bounds == nullptr) return false;
  if (child->upper_bounds == bounds) return true;
  if (!make_idiom_parts(child)) return false;
  Py_XSETREF(child->upper_bounds, Py_NewRef(bounds));
  return true;
}

}  // namespace

bool bind_child(ChildObject* child) {
  FamilyObject* family = child->family;
  std::vector<std::string_view> views;
  if (!bind_family(family) || !label_views(child->values, views)) return false;
  const bool bound = raising_on_failure([&] {
    switch (family->definition->kind) {
      case MetricKind::counter:
        child->counter = static_cast<CounterFamily*>(family->native)->labels(views);
        break;
      case MetricKind::gauge:
        child->gauge = static_cast<GaugeFamily*>(family->native)->labels(views);
        break;
      case MetricKind::histogram:
      case MetricKind::summary:
        child->histogram = static_cast<HistogramFamily*>(family->native)->labels(views);
        break;
    }
  });
  if (!bound) return false;
  child->generation = binding_generation;
  return child->idiom_sum == nullptr || show_recorded_bounds(child);
}

// --------------------------------------------------------------- children

namespace {

void child_dealloc(ChildObject* self) {
  PyObject_GC_UnTrack(self);
  detach_idiom_parts(self);
  Py_CLEAR(self->idiom_sum);
  Py_CLEAR(self->idiom_buckets);
  Py_CLEAR(self->upper_bounds);
  Py_CLEAR(self->family);
  Py_CLEAR(self->values);
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

// A child is in a cycle the collector must see: family -> children ->
// child -> family (the family's tp_clear breaks it). The idiom's parts hold
// no reference back (see native_idiom.hpp).
int child_traverse(ChildObject* self, visitproc visit, void* arg) {
  Py_VISIT(self->family);
  return 0;
}

// False when the host refused the series (its family is at the bound on
// series per process): recording through the child then does nothing but
// count the refusal.
PyObject* child_kept(ChildObject* self, void*) {
  if (!child_ready(self)) return nullptr;
  return PyBool_FromLong(!series_refused(self));
}

PyObject* child_family(ChildObject* self, void*) {
  Py_INCREF(self->family);
  return reinterpret_cast<PyObject*>(self->family);
}

PyObject* child_values(ChildObject* self, void*) {
  Py_INCREF(self->values);
  return self->values;
}

#define CHILD_GETTER(name, function, doc) \
  { name, reinterpret_cast<getter>(function), nullptr, doc, nullptr }

PyGetSetDef child_getset[] = {
    CHILD_GETTER("kept", child_kept,
                 "False when the host refused this series (past the bound on series per family)"),
    CHILD_GETTER("_family", child_family, "the family of this series"),
    CHILD_GETTER("_values", child_values, "the label values, in the family's labelnames order"),
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// Python subclasses (tokenspeed_metrics.prometheus_client's children) add
// methods, never instance fields; every child type is collected (see
// child_traverse).
PyTypeObject make_child_type(const char* name, PyMethodDef* methods,
                             PyMemberDef* members = nullptr) {
  PyTypeObject type = blank_type();
  type.tp_name = name;
  type.tp_basicsize = sizeof(ChildObject);
  type.tp_dealloc = reinterpret_cast<destructor>(child_dealloc);
  type.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC;
  type.tp_doc = "One series of a metric family: a handle to keep and record with.";
  type.tp_traverse = reinterpret_cast<traverseproc>(child_traverse);
  type.tp_methods = methods;
  type.tp_members = members;
  type.tp_getset = child_getset;
  return type;
}

PyTypeObject counter_child_type =
    make_child_type("tokenspeed_metrics.CounterChild", counter_child_methods);
PyTypeObject gauge_child_type =
    make_child_type("tokenspeed_metrics.GaugeChild", gauge_child_methods);
PyTypeObject histogram_child_type = make_child_type(
    "tokenspeed_metrics.HistogramChild", histogram_child_methods, histogram_child_members);
PyTypeObject summary_child_type =
    make_child_type("tokenspeed_metrics.SummaryChild", histogram_child_methods);

}  // namespace

PyTypeObject blank_type() {
  PyTypeObject type{};
  type.ob_base.ob_base.ob_refcnt = 1;
  return type;
}

PyTypeObject* child_type_of(MetricKind kind) {
  switch (kind) {
    case MetricKind::counter:
      return &counter_child_type;
    case MetricKind::gauge:
      return &gauge_child_type;
    case MetricKind::histogram:
      return &histogram_child_type;
    case MetricKind::summary:
      return &summary_child_type;
  }
  return &counter_child_type;
}

// A child of values, not bound yet (child_ready binds it); a histogram
// child of tokenspeed_metrics.prometheus_client with the idiom's parts.
ChildObject* make_child(FamilyObject* family, PyObject* values) {
  PyTypeObject* type =
      family->child_type != nullptr ? family->child_type : child_type_of(family->definition->kind);
  auto* child = reinterpret_cast<ChildObject*>(type->tp_alloc(type, 0));
  if (child == nullptr) return nullptr;
  Py_INCREF(family);
  Py_INCREF(values);
  child->family = family;
  child->values = values;
  child->generation = 0;
  new (&child->counter) Counter();
  new (&child->gauge) Gauge();
  new (&child->histogram) Histogram();
  child->idiom_sum = nullptr;
  child->idiom_buckets = nullptr;
  child->upper_bounds = nullptr;
  if (family->definition->kind == MetricKind::histogram && is_compat_family(family)) {
    // Bound first, so the parts have the bounds the host records with (a
    // view's); unbound (not started yet) they have the engine's until the
    // child binds (bind_child), and the reason is raised when it records.
    if (!bind_family(family)) PyErr_Clear();
    if (!show_recorded_bounds(child)) {
      Py_DECREF(child);
      return nullptr;
    }
  }
  return child;
}

// True when the host refused the child's label set: its family is at the
// bound on series per process. Such a child is not cached, so label values
// that never become series do not pile up here either.
bool series_refused(const ChildObject* child) {
  const FamilyObject* family = child->family;
  switch (family->definition->kind) {
    case MetricKind::counter:
      return !child->counter && static_cast<CounterFamily*>(family->native)->series_count() != 0;
    case MetricKind::gauge:
      return !child->gauge && static_cast<GaugeFamily*>(family->native)->series_count() != 0;
    case MetricKind::histogram:
    case MetricKind::summary:
      return !child->histogram &&
             static_cast<HistogramFamily*>(family->native)->series_count() != 0;
  }
  return false;
}

// True when the child records into its family's overflow series (a view's
// cardinality_limit): like a refused child it is not cached, so the label
// sets past the cap do not pile up here.
bool series_overflowed(const ChildObject* child) {
  return child->counter.overflow() || child->gauge.overflow() || child->histogram.overflow();
}

int add_handle_types(PyObject* module) {
  struct Entry {
    const char* name;
    PyTypeObject* type;
  };
  for (const Entry& entry :
       {Entry{"CounterChild", &counter_child_type}, Entry{"GaugeChild", &gauge_child_type},
        Entry{"HistogramChild", &histogram_child_type},
        Entry{"CounterFamily", &counter_family_type}, Entry{"GaugeFamily", &gauge_family_type},
        Entry{"HistogramFamily", &histogram_family_type},
        Entry{"SummaryChild", &summary_child_type}, Entry{"SummaryFamily", &summary_family_type}}) {
    if (PyType_Ready(entry.type) < 0) return -1;
    Py_INCREF(entry.type);
    if (PyModule_AddObject(module, entry.name, reinterpret_cast<PyObject*>(entry.type)) < 0) {
      Py_DECREF(entry.type);
      return -1;
    }
  }
  return 0;
}

// The name the host gives the family in this process: a view's, or the
// engine's where no view renames it or another family holds the view's
// name (pipeline/view_renames.hpp). Binds the family first; unbound (not
// started yet, or its definition refused) the engine's.
PyObject* family_exposed_name(FamilyObject* self, void*) {
  if (self->definition == nullptr) Py_RETURN_NONE;
  const MetricDefinition* shown = self->definition;
  if (bind_family(self)) {
    switch (self->definition->kind) {
      case MetricKind::counter:
        shown = &static_cast<const CounterFamily*>(self->native)->definition();
        break;
      case MetricKind::gauge:
        shown = &static_cast<const GaugeFamily*>(self->native)->definition();
        break;
      case MetricKind::histogram:
      case MetricKind::summary:
        shown = &static_cast<const HistogramFamily*>(self->native)->definition();
        break;
    }
  } else {
    PyErr_Clear();
  }
  return PyUnicode_FromString(shown->name.c_str());
}

}  // namespace tokenspeed::metrics::python
