// python_sink.cpp — emit and close of a Python sink: builds the MetricEvent
// (metric and label names cached per metric, as their metadata lives until
// close), calls the sink, turns an exception into a disabling error.
#include "python_sink.hpp"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::python_bridge {

// How often emit reads a sink's figures: /metrics is scraped every few
// seconds, and each read is a Python call.
constexpr std::chrono::seconds kFiguresInterval{1};

PythonSink::PythonSink(PyObject* sink_tuple, PyObject* event_type, const plugin::Host& host)
    : host_(host) {
  PyObject* object = nullptr;
  PyObject* emit = nullptr;
  PyObject* close = nullptr;
  PyObject* figures = nullptr;
  if (!PyArg_ParseTuple(sink_tuple, "OOOO", &object, &emit, &close, &figures))
    throw_python_error("create_sink");
  sink_ = Py_NewRef(object);
  emit_ = Py_NewRef(emit);
  close_ = Py_NewRef(close);
  if (figures != Py_None && host_.takes_figures()) figures_ = Py_NewRef(figures);
  event_type_ = Py_NewRef(event_type);
  operations_[TSM_OP_INC] = PyUnicode_InternFromString("inc");
  operations_[TSM_OP_SET] = PyUnicode_InternFromString("set");
  operations_[TSM_OP_OBSERVE] = PyUnicode_InternFromString("observe");
}

PythonSink::~PythonSink() {
  GilGuard gil;
  for (auto& [info, names] : names_) {
    Py_XDECREF(names.metric);
    for (PyObject* label : names.label_names) Py_DECREF(label);
  }
  for (PyObject* operation : operations_) Py_XDECREF(operation);
  Py_XDECREF(emit_);
  Py_XDECREF(close_);
  Py_XDECREF(figures_);
  Py_XDECREF(sink_);
  Py_XDECREF(event_type_);
}

const PythonSink::MetricNames* PythonSink::names_for(const tsm_metric_event& event) {
  if (event.info == nullptr) return nullptr;
  auto found = names_.find(event.info);
  if (found != names_.end()) return &found->second;
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
  return &names_.emplace(event.info, std::move(names)).first->second;
}

// A new MetricEvent, or nullptr with an exception set.
PyObject* PythonSink::make_event(const tsm_metric_event& event) {
  const MetricNames* names = names_for(event);
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
                            ? Py_NewRef(operations_[event.operation])
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
      PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(event_type_), args, nullptr);
  Py_DECREF(args);
  return result;
}

void PythonSink::emit(const tsm_metric_event& event) {
  with_gil("emit", [&] {
    PyObject* python_event = make_event(event);
    if (python_event == nullptr) throw_python_error("building the MetricEvent");
    PyObject* result = PyObject_CallOneArg(emit_, python_event);
    Py_DECREF(python_event);
    if (result == nullptr) throw_python_error("emit() raised");
    Py_DECREF(result);
    if (figures_ != nullptr && std::chrono::steady_clock::now() >= next_figures_) {
      report_figures();
      next_figures_ = std::chrono::steady_clock::now() + kFiguresInterval;
    }
  });
}

void PythonSink::close(std::chrono::nanoseconds timeout) {
  GilGuard gil;
  PyObject* result = PyObject_CallFunction(close_, "d", seconds(timeout));
  if (result == nullptr) throw_python_error("close() raised");
  Py_DECREF(result);
  report_figures();  // the last word, while the host still takes it
}

void PythonSink::report_figures() {
  if (figures_ == nullptr) return;
  PyObject* result = PyObject_CallNoArgs(figures_);
  plugin::DeliveryFigures figures;
  unsigned long long counts[5] = {};
  const bool read = result != nullptr && PyArg_ParseTuple(result, "KKKKK", &counts[0], &counts[1],
                                                          &counts[2], &counts[3], &counts[4]);
  Py_XDECREF(result);
  if (!read) {
    host_.log(TSM_LOG_WARNING,
              "figures() of the sink failed, and is not asked again: " + take_exception());
    Py_CLEAR(figures_);
    return;
  }
  figures.sent = counts[0];
  figures.refused = counts[1];
  figures.lost = counts[2];
  figures.retries = counts[3];
  figures.pending = counts[4];
  host_.report_figures(figures);
}

}  // namespace tokenspeed::metrics::python_bridge
