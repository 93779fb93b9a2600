// python_sink.cpp — emit and close of a Python sink: builds the MetricEvent
// (metric and label names cached per metric, as their metadata lives until
// close), calls the sink, turns an exception into a disabling error.
// Threading: the host calls emit from the output's worker thread, one call
// at a time, and close once after the last emit; both take the GIL here.
#include "python_sink.hpp"

#include <string>
#include <new>
#include <unordered_map>
#include <vector>

namespace tokenspeed::metrics::python_bridge {
namespace {

// Python strings of one metric's name and label names, made once.
struct MetricNames {
  PyObject* metric = nullptr;
  std::vector<PyObject*> label_names;
};

struct PythonSink {
  PyObject* sink = nullptr;        // the plugin's object
  PyObject* emit = nullptr;        // its bound emit
  PyObject* close = nullptr;       // its bound close
  PyObject* event_type = nullptr;  // tokenspeed.runtime.metrics.events.MetricEvent
  PyObject* operations[4] = {};    // "inc", "set", "observe" by tsm_operation
  std::unordered_map<const tsm_metric_info*, MetricNames> names;
};

const MetricNames* names_for(PythonSink& sink, const tsm_metric_event& event) {
  if (event.info == nullptr) return nullptr;
  auto found = sink.names.find(event.info);
  if (found != sink.names.end()) return &found->second;
  MetricNames names;
  names.metric = PyUnicode_FromString(event.metric);
  if (names.metric == nullptr) return nullptr;
  for (uint32_t i = 0; i < event.label_count; ++i) {
    PyObject* label = PyUnicode_FromString(event.label_names[i]);
    if (label == nullptr) {
      for (PyObject* made : names.label_names) Py_DECREF(made);
      Py_DECREF(names.metric);
      return nullptr;
    }
    names.label_names.push_back(label);
  }
  return &sink.names.emplace(event.info, std::move(names)).first->second;
}

// A new MetricEvent, or nullptr with an exception set.
PyObject* make_event(PythonSink& sink, const tsm_metric_event& event) {
  const MetricNames* names = names_for(sink, event);
  if (names == nullptr && PyErr_Occurred()) return nullptr;
  const bool cached = names != nullptr && names->label_names.size() == event.label_count;

  PyObject* labels = PyDict_New();
  if (labels == nullptr) return nullptr;
  for (uint32_t i = 0; i < event.label_count; ++i) {
    PyObject* value = PyUnicode_FromString(event.label_values[i]);
    int status = -1;
    if (value != nullptr) {
      status = cached ? PyDict_SetItem(labels, names->label_names[i], value)
                      : PyDict_SetItemString(labels, event.label_names[i], value);
      Py_DECREF(value);
    }
    if (status != 0) {
      Py_DECREF(labels);
      return nullptr;
    }
  }
  PyObject* read_only_labels = PyDictProxy_New(labels);
  Py_DECREF(labels);
  if (read_only_labels == nullptr) return nullptr;

  PyObject* metric =
      names != nullptr ? Py_NewRef(names->metric) : PyUnicode_FromString(event.metric);
  PyObject* operation = event.operation >= TSM_OP_INC && event.operation <= TSM_OP_OBSERVE
                            ? Py_NewRef(sink.operations[event.operation])
                            : PyUnicode_FromString("unknown");
  PyObject* fields = PyTuple_New(6);
  PyObject* parts[6] = {PyLong_FromLongLong(event.timestamp_ns),
                        metric,
                        operation,
                        PyFloat_FromDouble(event.value),
                        read_only_labels,
                        PyLong_FromUnsignedLongLong(event.weight)};
  bool complete = fields != nullptr;
  for (int i = 0; i < 6; ++i) {
    if (parts[i] == nullptr) complete = false;
  }
  if (!complete) {
    for (PyObject* part : parts) Py_XDECREF(part);
    Py_XDECREF(fields);
    return nullptr;
  }
  for (int i = 0; i < 6; ++i) PyTuple_SET_ITEM(fields, i, parts[i]);
  // tuple.__new__(MetricEvent, fields): the NamedTuple without its Python __new__.
  PyObject* args = PyTuple_Pack(1, fields);
  Py_DECREF(fields);
  if (args == nullptr) return nullptr;
  PyObject* result =
      PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(sink.event_type), args, nullptr);
  Py_DECREF(args);
  return result;
}

int sink_emit(void* self, const tsm_metric_event* event, tsm_buffer* error) noexcept {
  auto& sink = *static_cast<PythonSink*>(self);
  GilGuard gil;
  try {
    PyObject* python_event = make_event(sink, *event);
    if (python_event == nullptr) return fail_with_exception(error, "building the MetricEvent");
    PyObject* result = PyObject_CallOneArg(sink.emit, python_event);
    Py_DECREF(python_event);
    if (result == nullptr) return fail_with_exception(error, "emit() raised");
    Py_DECREF(result);
    return TSM_OK;
  } catch (...) {
    PyErr_Clear();
    assign(error, "emit: out of memory");
    return TSM_ERROR;
  }
}

int sink_close(void* self, int64_t timeout_ns, tsm_buffer* error) noexcept {
  auto* sink = static_cast<PythonSink*>(self);
  GilGuard gil;
  int status = TSM_OK;
  PyObject* result = PyObject_CallFunction(sink->close, "d", static_cast<double>(timeout_ns) / 1e9);
  if (result == nullptr) {
    status = fail_with_exception(error, "close() raised");
  } else {
    Py_DECREF(result);
  }
  for (auto& [info, names] : sink->names) {
    Py_XDECREF(names.metric);
    for (PyObject* label : names.label_names) Py_DECREF(label);
  }
  for (PyObject* operation : sink->operations) Py_XDECREF(operation);
  Py_XDECREF(sink->emit);
  Py_XDECREF(sink->close);
  Py_XDECREF(sink->sink);
  Py_XDECREF(sink->event_type);
  delete sink;
  return status;
}

const tsm_sink_vtable kSinkVtable = {sizeof(tsm_sink_vtable), &sink_emit, &sink_close};

}  // namespace

int make_sink(PyObject* sink_tuple, PyObject* event_type, tsm_sink* sink,
              tsm_buffer* error) noexcept {
  PyObject* object = nullptr;
  PyObject* emit = nullptr;
  PyObject* close = nullptr;
  if (!PyArg_ParseTuple(sink_tuple, "OOO", &object, &emit, &close)) {
    return fail_with_exception(error, "create_sink");
  }
  auto* python_sink = new (std::nothrow) PythonSink;
  if (python_sink == nullptr) {
    assign(error, "create_sink: out of memory");
    return TSM_ERROR;
  }
  python_sink->sink = Py_NewRef(object);
  python_sink->emit = Py_NewRef(emit);
  python_sink->close = Py_NewRef(close);
  python_sink->event_type = Py_NewRef(event_type);
  python_sink->operations[TSM_OP_INC] = PyUnicode_InternFromString("inc");
  python_sink->operations[TSM_OP_SET] = PyUnicode_InternFromString("set");
  python_sink->operations[TSM_OP_OBSERVE] = PyUnicode_InternFromString("observe");
  sink->vtable = &kSinkVtable;
  sink->self = python_sink;
  return TSM_OK;
}

}  // namespace tokenspeed::metrics::python_bridge
