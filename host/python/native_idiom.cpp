// native_idiom.cpp — the batched idiom's _sum and _buckets[i] (see
// native_idiom.hpp): _sum.inc(total) keeps the total for this thread,
// _buckets[i].inc(n) checks the pair and records it with one
// observe_total(total, n); no Python code runs on either call.
#include "native_idiom.hpp"

#include <cmath>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

#include "native_handle_parts.hpp"

namespace tokenspeed::metrics::python {
namespace {

#define USE_INSTEAD "use child.observe(value, weight) (weight samples of value) instead"

// A batch opened by _sum.inc(total) in one thread, closed by its bucket.
struct Pending {
  unsigned long thread;
  double total;
};

// The child holds its parts; a part holds no reference back, so there is
// no cycle (a refused child, made anew by every labels(), goes as soon as it
// is dropped). The child's dealloc hands its series to its _sum (family,
// values, handle): parts kept past their child go on recording into it.
struct SumObject {
  PyObject_HEAD ChildObject* child;  // borrowed; null once the child is gone
  FamilyObject* family;              // once the child is gone: strong reference
  PyObject* values;                  // once the child is gone: strong reference
  Histogram histogram;               // once the child is gone: the series' handle
  std::uint64_t generation;          // of histogram
  std::vector<Pending> pending;      // one per thread with an open batch (few)
  std::vector<double> bounds;        // the bounds its series records with (shown_bounds)
};

struct BucketObject {
  PyObject_HEAD SumObject* sum;  // strong reference
  std::size_t index;             // the +Inf bucket is the number of bounds
};

// The open batch of this thread, or null.
Pending* pending_of(SumObject* sum, unsigned long thread) {
  for (Pending& batch : sum->pending) {
    if (batch.thread == thread) return &batch;
  }
  return nullptr;
}

// The one optional argument amount (positional or by keyword); null when
// not given.
bool amount_argument(PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                     PyObject*& amount) {
  amount = nargs >= 1 ? args[0] : nullptr;
  const Py_ssize_t nkw = kwnames != nullptr ? PyTuple_GET_SIZE(kwnames) : 0;
  if (nargs + nkw > 1) {
    PyErr_SetString(PyExc_TypeError, "inc() takes at most one argument (amount)");
    return false;
  }
  if (nkw == 1) {
    PyObject* key = PyTuple_GET_ITEM(kwnames, 0);
    if (PyUnicode_CompareWithASCIIString(key, "amount") != 0) {
      PyErr_Format(PyExc_TypeError, "inc(): unexpected keyword argument %R", key);
      return false;
    }
    amount = args[0];
  }
  return true;
}

// ------------------------------------------------------------------- _sum

// _sum.inc(amount=1): opens this thread's batch with float(amount).
PyObject* sum_inc(SumObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* amount = nullptr;
  if (!amount_argument(args, nargs, kwnames, amount)) return nullptr;
  const unsigned long thread = PyThread_get_thread_ident();
  if (pending_of(self, thread) != nullptr) {
    PyErr_SetString(PyExc_ValueError,
                    "histogram _sum.inc() twice without a _buckets[i].inc(n) between: the batched "
                    "idiom is one _sum.inc(total) then one _buckets[i].inc(n); " USE_INSTEAD);
    return nullptr;
  }
  double total = 1.0;
  if (amount != nullptr && PyFloat_CheckExact(amount)) {
    total = PyFloat_AS_DOUBLE(amount);
  } else if (amount != nullptr) {  // float(amount), as prometheus_client's value takes it
    PyObject* number = PyNumber_Float(amount);
    if (number == nullptr) return nullptr;
    total = PyFloat_AS_DOUBLE(number);
    Py_DECREF(number);
  }
  try {
    self->pending.push_back(Pending{thread, total});
  } catch (const std::bad_alloc&) {
    return PyErr_NoMemory();
  }
  Py_RETURN_NONE;
}

// Runs use(handle) with the series' handle bound to this process's
// Recorder: the child's while it lives (held meanwhile: binding can run
// Python code, the attach hook, that could drop its other references),
// else the sum's own. False with a Python exception set.
template <typename Use>
bool with_series(SumObject* sum, Use&& use) {
  if (ChildObject* child = sum->child) {
    Py_INCREF(child);
    const bool ready = child_ready(child);
    if (ready) use(child->histogram);
    Py_DECREF(child);
    return ready;
  }
  if (sum->generation != binding_generation) {
    if (!bind_histogram(sum->family, sum->values, sum->histogram)) return false;
    sum->generation = binding_generation;
  }
  use(sum->histogram);
  return true;
}

// The family of a part's series.
const FamilyObject* family_of(const SumObject* sum) {
  return sum->child != nullptr ? sum->child->family : sum->family;
}

// _sum.get(): this process's sum, with this thread's pending total
// (prometheus_client's _sum.inc() has added it already).
PyObject* sum_get(SumObject* self, PyObject*) {
  double total = 0.0;
  if (!with_series(self, [&](const Histogram& series) { total = series.sum(); })) return nullptr;
  if (const Pending* batch = pending_of(self, PyThread_get_thread_ident())) total += batch->total;
  return PyFloat_FromDouble(total);
}

PyObject* sum_value(SumObject* self, void*) { return sum_get(self, nullptr); }

// prometheus_client's multiprocess mode keeps no exemplar either.
PyObject* no_exemplar(PyObject*, PyObject*) { Py_RETURN_NONE; }

void sum_dealloc(SumObject* self) {
  Py_CLEAR(self->family);
  Py_CLEAR(self->values);
  self->pending.~vector();
  self->bounds.~vector();
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

// --------------------------------------------------------------- _buckets

// The number of samples of a bucket's inc(amount): a positive whole number
// (an int, or a float without a fraction); 0 with ValueError otherwise.
std::uint64_t sample_count(const BucketObject* self, PyObject* amount) {
  if (amount == nullptr) return 1;
  bool whole = false;
  bool too_large = false;
  std::uint64_t count = 0;
  if (PyLong_Check(amount)) {
    int overflow = 0;
    const long long value = PyLong_AsLongLongAndOverflow(amount, &overflow);
    if (value == -1 && PyErr_Occurred()) return 0;
    whole = overflow > 0 || (overflow == 0 && value > 0);
    too_large = overflow > 0;
    count = whole && !too_large ? static_cast<std::uint64_t>(value) : 0;
  } else if (PyFloat_Check(amount)) {
    const double value = PyFloat_AS_DOUBLE(amount);
    whole = std::isfinite(value) && value > 0 && value == std::floor(value);
    too_large = whole && value >= 18446744073709551616.0;  // 2^64
    count = whole && !too_large ? static_cast<std::uint64_t>(value) : 0;
  }
  if (too_large) {
    PyErr_SetString(PyExc_ValueError, "weight must be a non-negative integer");
    return 0;
  }
  if (!whole) {
    PyErr_Format(PyExc_ValueError,
                 "histogram _buckets[%zu].inc(%R): the batched idiom needs a positive whole "
                 "number of samples; " USE_INSTEAD,
                 self->index, amount);
    return 0;
  }
  return count;
}

// Bucket i holds the values above bound i - 1 up to bound i (the bounds
// ascend; the last bucket has no upper bound): two comparisons.
bool in_bucket(const std::vector<double>& bounds, std::size_t i, double value) {
  return (i == bounds.size() || (i < bounds.size() && value <= bounds[i])) &&
         (i == 0 || (i <= bounds.size() && value > bounds[i - 1]));
}

// Raises prometheus_client's-style ValueError for a batch recorded in the
// wrong bucket: count samples of total / count belong in bucket expected.
PyObject* wrong_bucket(const BucketObject* self, std::uint64_t count, double total, double value,
                       std::size_t expected, double bound) {
  PyObject* total_object = PyFloat_FromDouble(total);
  PyObject* value_object = PyFloat_FromDouble(value);
  PyObject* bound_object = PyFloat_FromDouble(bound);
  if (total_object != nullptr && value_object != nullptr && bound_object != nullptr) {
    const auto n = static_cast<unsigned long long>(count);
    PyErr_Format(PyExc_ValueError,
                 "histogram _buckets[%zu].inc(%llu) after _sum.inc(%R): %llu samples of %R "
                 "belong in bucket %zu (le=%R); " USE_INSTEAD,
                 self->index, n, total_object, n, value_object, expected, bound_object);
  }
  Py_XDECREF(total_object);
  Py_XDECREF(value_object);
  Py_XDECREF(bound_object);
  return nullptr;
}

// _buckets[i].inc(amount=1): closes this thread's batch as amount samples
// of total / amount, which must fall in bucket i; records them at once.
PyObject* bucket_inc(BucketObject* self, PyObject* const* args, Py_ssize_t nargs,
                     PyObject* kwnames) {
  PyObject* amount = nullptr;
  if (!amount_argument(args, nargs, kwnames, amount)) return nullptr;
  SumObject* sum = self->sum;
  Pending* batch = pending_of(sum, PyThread_get_thread_ident());
  if (batch == nullptr) {
    PyErr_Format(PyExc_ValueError,
                 "histogram _buckets[%zu].inc() without a preceding _sum.inc(total) in this "
                 "thread: a bucket alone would leave the sum behind; " USE_INSTEAD,
                 self->index);
    return nullptr;
  }
  // The batch is closed whatever follows: a refused pair leaves nothing.
  const double total = batch->total;
  *batch = sum->pending.back();
  sum->pending.pop_back();
  const std::uint64_t count = sample_count(self, amount);
  if (count == 0) return nullptr;
  const std::vector<double>& bounds = sum->bounds;
  const double value = total / static_cast<double>(count);
  // The host places the samples by their value: i only checks the pair,
  // against the bounds shown, or the engine's own when a view changed them
  // (an engine may find i in its own list).
  const std::size_t i = self->index;
  if (!in_bucket(bounds, i, value) && !in_bucket(family_of(sum)->definition->buckets, i, value) &&
      !std::isnan(value)) {
    std::size_t expected = 0;
    while (expected < bounds.size() && !(value <= bounds[expected])) ++expected;
    return wrong_bucket(self, count, total, value, expected,
                        expected < bounds.size() ? bounds[expected] : INFINITY);
  }
  if (!with_series(sum, [&](const Histogram& series) { series.observe_total(total, count); })) {
    return nullptr;
  }
  Py_RETURN_NONE;
}

// _buckets[i].get(): this process's count of bucket i (not cumulative).
PyObject* bucket_get(BucketObject* self, PyObject*) {
  double count = 0.0;
  const bool read = with_series(
      self->sum, [&](const Histogram& series) { count = series.bucket_count(self->index); });
  return read ? PyFloat_FromDouble(count) : nullptr;
}

PyObject* bucket_value(BucketObject* self, void*) { return bucket_get(self, nullptr); }

void bucket_dealloc(BucketObject* self) {
  Py_CLEAR(self->sum);
  Py_TYPE(self)->tp_free(reinterpret_cast<PyObject*>(self));
}

// ------------------------------------------------------------------ types

#define FASTCALL_KW(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(f))

PyMethodDef sum_methods[] = {
    {"inc", FASTCALL_KW(sum_inc), METH_FASTCALL | METH_KEYWORDS,
     "inc(amount=1): opens this thread's batch; the next _buckets[i].inc(n) records it"},
    {"get", reinterpret_cast<PyCFunction>(sum_get), METH_NOARGS,
     "get(): this process's sum, with this thread's pending total"},
    {"get_exemplar", no_exemplar, METH_NOARGS, "None (no exemplars in multiprocess mode)"},
    {nullptr, nullptr, 0, nullptr}};
PyGetSetDef sum_getset[] = {{"_value", reinterpret_cast<getter>(sum_value), nullptr,
                             "this process's sum, as get()", nullptr},
                            {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMethodDef bucket_methods[] = {
    {"inc", FASTCALL_KW(bucket_inc), METH_FASTCALL | METH_KEYWORDS,
     "inc(n=1): closes this thread's batch as n samples of total / n"},
    {"get", reinterpret_cast<PyCFunction>(bucket_get), METH_NOARGS,
     "get(): this process's count of this bucket (not cumulative)"},
    {"get_exemplar", no_exemplar, METH_NOARGS, "None (no exemplars in multiprocess mode)"},
    {nullptr, nullptr, 0, nullptr}};
PyGetSetDef bucket_getset[] = {{"_value", reinterpret_cast<getter>(bucket_value), nullptr,
                                "this process's count of this bucket, as get()", nullptr},
                               {nullptr, nullptr, nullptr, nullptr, nullptr}};

// A static type object: zeroed, with the reference a static object holds.
// Not collected: a part is in no cycle.
PyTypeObject make_part_type(const char* name, Py_ssize_t size, destructor dealloc,
                            PyMethodDef* methods, PyGetSetDef* getset, const char* doc) {
  PyTypeObject type{};
  type.ob_base.ob_base.ob_refcnt = 1;
  type.tp_name = name;
  type.tp_basicsize = size;
  type.tp_dealloc = dealloc;
  type.tp_flags = Py_TPFLAGS_DEFAULT;
  type.tp_doc = doc;
  type.tp_methods = methods;
  type.tp_getset = getset;
  return type;
}

PyTypeObject sum_type = make_part_type(
    "tokenspeed_metrics.HistogramSum", sizeof(SumObject), reinterpret_cast<destructor>(sum_dealloc),
    sum_methods, sum_getset, "A histogram child's _sum for the batched idiom.");
PyTypeObject bucket_type =
    make_part_type("tokenspeed_metrics.HistogramBucket", sizeof(BucketObject),
                   reinterpret_cast<destructor>(bucket_dealloc), bucket_methods, bucket_getset,
                   "A histogram child's _buckets[i] for the batched idiom.");

}  // namespace

bool make_idiom_parts(ChildObject* child) {
  const std::vector<double>& bounds = shown_bounds(child->family);
  if (child->idiom_sum != nullptr && child->idiom_buckets != nullptr &&
      reinterpret_cast<SumObject*>(child->idiom_sum)->bounds == bounds) {
    return true;
  }
  auto* sum = reinterpret_cast<SumObject*>(sum_type.tp_alloc(&sum_type, 0));
  if (sum == nullptr) return false;
  new (&sum->histogram) Histogram();
  new (&sum->pending) std::vector<Pending>();
  new (&sum->bounds) std::vector<double>();
  sum->child = child;
  try {
    sum->bounds = bounds;
  } catch (const std::bad_alloc&) {
    Py_DECREF(sum);
    PyErr_NoMemory();
    return false;
  }
  const std::size_t n = bounds.size() + 1;
  PyObject* buckets = PyTuple_New(static_cast<Py_ssize_t>(n));
  if (buckets == nullptr) {
    Py_DECREF(sum);
    return false;
  }
  for (std::size_t i = 0; i < n; ++i) {
    auto* bucket = reinterpret_cast<BucketObject*>(bucket_type.tp_alloc(&bucket_type, 0));
    if (bucket == nullptr) {
      Py_DECREF(buckets);
      Py_DECREF(sum);
      return false;
    }
    bucket->sum = reinterpret_cast<SumObject*>(Py_NewRef(reinterpret_cast<PyObject*>(sum)));
    bucket->index = i;
    PyTuple_SET_ITEM(buckets, static_cast<Py_ssize_t>(i), reinterpret_cast<PyObject*>(bucket));
  }
  // Parts made for other bounds, which the engine may still hold, go on
  // recording into the child's series as parts outliving it do.
  detach_idiom_parts(child);
  Py_XSETREF(child->idiom_sum, reinterpret_cast<PyObject*>(sum));
  Py_XSETREF(child->idiom_buckets, buckets);
  return true;
}

void detach_idiom_parts(ChildObject* child) {
  auto* sum = reinterpret_cast<SumObject*>(child->idiom_sum);
  if (sum == nullptr || sum->child != child) return;
  sum->child = nullptr;
  sum->family =
      reinterpret_cast<FamilyObject*>(Py_NewRef(reinterpret_cast<PyObject*>(child->family)));
  sum->values = Py_NewRef(child->values);
  sum->histogram = child->histogram;
  sum->generation = child->generation;
}

int add_idiom_types(PyObject* module) {
  for (auto [name, type] :
       {std::pair{"HistogramSum", &sum_type}, std::pair{"HistogramBucket", &bucket_type}}) {
    if (PyType_Ready(type) < 0) return -1;
    if (PyModule_AddObjectRef(module, name, reinterpret_cast<PyObject*>(type)) < 0) return -1;
  }
  return 0;
}

}  // namespace tokenspeed::metrics::python
