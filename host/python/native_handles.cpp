// native_handles.cpp — families and children written against the CPython C
// API with METH_FASTCALL: a cached child's inc/set/observe parses its
// arguments, checks the binding generation and calls the host's handle; it
// allocates no Python object and never releases the GIL (the work is tens of
// nanoseconds, less than releasing it would cost). A family's labels() that
// repeats its previous call returns that call's child after comparing the
// arguments by identity: no hashing, no str().
#include "native_handles.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include <structmember.h>

#include "native_idiom.hpp"

namespace tokenspeed::metrics::python {
namespace {

PyTypeObject* child_type_of(MetricKind kind);

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
  if (bound) child->generation = binding_generation;
  return bound;
}

namespace {

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
bool one_argument(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, const char* name,
                  PyObject*& out) {
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

// --------------------------------------------------------------- children

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

// Reads the optional argument amount (positional or by keyword) of inc and
// dec; amount keeps its default when it is not given.
bool optional_amount(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, double& amount) {
  if (nargs == 0 && kwnames == nullptr) return true;
  PyObject* value = nullptr;
  if (!one_argument(args, nargs, kwnames, "amount", value)) return false;
  return value == nullptr || as_double(value, amount);
}

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

// This process's own figures of a series (prometheus_client's _value.get()
// in multiprocess mode); /metrics merges every process's.
PyObject* counter_get(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  return PyFloat_FromDouble(self->counter.value());
}

PyObject* gauge_get(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  return PyFloat_FromDouble(self->gauge.value());
}

// (count of bucket 0, ..., count of +Inf): not cumulative.
PyObject* histogram_bucket_counts(ChildObject* self, PyObject*) {
  if (!child_ready(self)) return nullptr;
  const std::size_t n = self->family->definition->buckets.size();
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

#define FASTCALL_KW(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

PyMethodDef counter_child_methods[] = {
    {"inc", FASTCALL_KW(counter_inc), METH_FASTCALL | METH_KEYWORDS,
     "inc(amount=1, exemplar=None)"},
    {"get", reinterpret_cast<PyCFunction>(counter_get), METH_NOARGS,
     "get(): what this process has counted"},
    {nullptr, nullptr, 0, nullptr}};
PyMethodDef gauge_child_methods[] = {
    {"set", FASTCALL_KW(gauge_set), METH_FASTCALL | METH_KEYWORDS, "set(value)"},
    {"inc", FASTCALL_KW(gauge_add<1>), METH_FASTCALL | METH_KEYWORDS, "inc(amount=1)"},
    {"dec", FASTCALL_KW(gauge_add<-1>), METH_FASTCALL | METH_KEYWORDS, "dec(amount=1)"},
    {"get", reinterpret_cast<PyCFunction>(gauge_get), METH_NOARGS,
     "get(): this process's current value"},
    {nullptr, nullptr, 0, nullptr}};
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

// A static type object: zeroed, with the reference a static object holds.
PyTypeObject blank_type() {
  PyTypeObject type{};
  type.ob_base.ob_base.ob_refcnt = 1;
  return type;
}

bool series_refused(const ChildObject* child);

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

// The family's bounds with +Inf, one list for every child (made once).
PyObject* family_upper_bounds(FamilyObject* family) {
  if (family->upper_bounds == nullptr) {
    const std::vector<double>& buckets = family->definition->buckets;
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
    family->upper_bounds = bounds;
  }
  return family->upper_bounds;
}

#define CHILD_GETTER(name, function, doc) \
  { name, reinterpret_cast<getter>(function), nullptr, doc, nullptr }

PyGetSetDef child_getset[] = {
    CHILD_GETTER("kept", child_kept,
                 "False when the host refused this series (past the bound on series per family)"),
    CHILD_GETTER("_family", child_family, "the family of this series"),
    CHILD_GETTER("_values", child_values, "the label values, in the family's labelnames order"),
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

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
    PyObject* bounds = family_upper_bounds(family);
    if (bounds == nullptr || !make_idiom_parts(child)) {
      Py_DECREF(child);
      return nullptr;
    }
    child->upper_bounds = Py_NewRef(bounds);
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

// ------------------------------------------------------ labels() and its cache

// A value whose str() cannot change while a reference to it is held: the
// last call may be recognised by the identity of such values.
inline bool immutable_value(PyObject* value) {
  return PyUnicode_CheckExact(value) || PyLong_CheckExact(value) || PyFloat_CheckExact(value) ||
         PyBool_Check(value) || value == Py_None;
}

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

// True when the names are the same str, by identity first.
inline bool same_name(PyObject* a, PyObject* b) { return a == b || PyUnicode_Compare(a, b) == 0; }

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
// (see series_refused); kept says which.
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
  if (series_refused(child)) {
    kept = false;
    return reinterpret_cast<PyObject*>(child);
  }
  // Another thread may have made it meanwhile (making one can run Python
  // code): the first one stays.
  PyObject* cached = PyDict_SetDefault(family->children, key, reinterpret_cast<PyObject*>(child));
  Py_DECREF(child);
  return cached != nullptr ? Py_NewRef(cached) : nullptr;
}

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

PyObject* family_children(FamilyObject* self, void*) {
  if (self->children == nullptr) return PyDict_New();
  return Py_NewRef(self->children);
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

// __init__(name, documentation, labelnames, unit, buckets, multiprocess_mode)
template <MetricKind Kind>
int family_init(FamilyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* keywords[] = {"name",    "documentation",     "labelnames", "unit",
                                   "buckets", "multiprocess_mode", nullptr};
  const char* name = nullptr;
  const char* documentation = nullptr;
  PyObject* labelnames = nullptr;
  const char* unit = "";
  PyObject* buckets = Py_None;
  const char* mode = "livemax";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "ss|OsOs", const_cast<char**>(keywords), &name,
                                   &documentation, &labelnames, &unit, &buckets, &mode)) {
    return -1;
  }
  MetricDefinition definition;
  definition.name = name;
  definition.kind = Kind;
  definition.help = documentation;
  definition.unit = unit;
  PyObject* names = PySequence_Tuple(labelnames != nullptr ? labelnames : PyTuple_New(0));
  if (names == nullptr) return -1;
  for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(names); ++i) {
    const char* label = PyUnicode_AsUTF8(PyTuple_GET_ITEM(names, i));
    if (label == nullptr) {
      Py_DECREF(names);
      return -1;
    }
    definition.label_names.emplace_back(label);
  }
  if (buckets != Py_None) {
    PyObject* fast = PySequence_Fast(buckets, "buckets must be a sequence of numbers");
    if (fast == nullptr) {
      Py_DECREF(names);
      return -1;
    }
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); ++i) {
      double bound = 0.0;
      if (!as_double(PySequence_Fast_GET_ITEM(fast, i), bound)) {
        Py_DECREF(fast);
        Py_DECREF(names);
        return -1;
      }
      definition.buckets.push_back(bound);
    }
    Py_DECREF(fast);
  }
  if (!gauge_mode_from_string(mode, definition.gauge_mode)) {
    Py_DECREF(names);
    PyErr_Format(PyExc_ValueError, "Invalid multiprocess mode: %s", mode);
    return -1;
  }
  try {
    auto checked = std::make_unique<MetricDefinition>(checked_definition(std::move(definition)));
    delete self->definition;
    self->definition = checked.release();
  } catch (...) {
    Py_DECREF(names);
    raise_from_cpp();
    return -1;
  }
  Py_XSETREF(self->labelnames, names);
  if (self->children == nullptr) self->children = PyDict_New();
  if (self->children == nullptr) return -1;
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
    {"_children", reinterpret_cast<getter>(family_children), nullptr,
     "the cached children: dict of label values (labelnames' order) to child", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

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

PyMethodDef counter_family_methods[] = {
    {"labels", FASTCALL_KW(family_labels), METH_FASTCALL | METH_KEYWORDS,
     "labels(*values) or labels(**values): the child of that series"},
    {"inc", FASTCALL_KW(forward_fastcall<counter_inc>), METH_FASTCALL | METH_KEYWORDS,
     "inc(amount=1, exemplar=None)"},
    {"get", reinterpret_cast<PyCFunction>(forward_noargs<counter_get>), METH_NOARGS,
     "get(): what this process has counted"},
    COMPAT_FAMILY_METHODS,
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

PyTypeObject counter_family_type = make_family_type<MetricKind::counter>(
    "tokenspeed_metrics._native.CounterFamily", counter_family_methods);
PyTypeObject gauge_family_type = make_family_type<MetricKind::gauge>(
    "tokenspeed_metrics._native.GaugeFamily", gauge_family_methods);
PyTypeObject histogram_family_type = make_family_type<MetricKind::histogram>(
    "tokenspeed_metrics._native.HistogramFamily", histogram_family_methods);
// A summary records as a histogram without buckets: the same methods.
PyTypeObject summary_family_type = make_family_type<MetricKind::summary>(
    "tokenspeed_metrics._native.SummaryFamily", histogram_family_methods);

}  // namespace

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

}  // namespace tokenspeed::metrics::python
