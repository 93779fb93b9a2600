// python_sink.hpp — a Python sink object as the kit's Sink (metric_reporter.hpp
// turns it into the C ABI sink): each event becomes a read-only MetricEvent
// passed to sink.emit with the GIL held for that call only; a sink with
// figures() has its delivery figures read after an emit at most once a
// second, and after close, and handed to the host. Never touches Python
// without the GIL.
#pragma once

#include <chrono>
#include <unordered_map>
#include <vector>

#include <tokenspeed/metric_reporter.hpp>

#include "python_interpreter.hpp"

namespace tokenspeed::metrics::python_bridge {

// Threading: the host calls emit from the output's delivery thread, one call
// at a time, and close once after the last emit; both take the GIL here.
class PythonSink {
 public:
  // Takes the (sink, emit, close, figures reader or None) tuple returned by
  // Reporter.create_sink, the MetricEvent type and the sink's host. Requires
  // the GIL. Throws std::runtime_error ("create_sink: ...") when the tuple is
  // not one.
  PythonSink(PyObject* sink_tuple, PyObject* event_type, const plugin::Host& host);
  ~PythonSink();  // takes the GIL to drop its references
  PythonSink(const PythonSink&) = delete;
  PythonSink& operator=(const PythonSink&) = delete;

  // Throws std::runtime_error with the Python exception: the host disables the sink.
  void emit(const tsm_metric_event& event);
  void close(std::chrono::nanoseconds timeout);

 private:
  // Python strings of one metric's name and label names, made once.
  struct MetricNames {
    PyObject* metric = nullptr;
    std::vector<PyObject*> label_names;
  };

  const MetricNames* names_for(const tsm_metric_event& event);
  PyObject* make_event(const tsm_metric_event& event);
  // Reads the sink's figures and reports them to the host. A figures() that
  // raises or returns something else is logged once and not asked again:
  // the figures are the plugin's word, never a reason to stop its events.
  // Requires the GIL.
  void report_figures();

  PyObject* sink_ = nullptr;        // the plugin's object
  PyObject* emit_ = nullptr;        // its bound emit
  PyObject* close_ = nullptr;       // its bound close
  PyObject* event_type_ = nullptr;  // tokenspeed.runtime.metrics.events.MetricEvent
  PyObject* operations_[4] = {};    // "inc", "set", "observe" by tsm_operation
  PyObject* figures_ = nullptr;     // the bridge's reader of sink.figures(), or none
  std::unordered_map<const tsm_metric_info*, MetricNames> names_;
  const plugin::Host host_;
  std::chrono::steady_clock::time_point next_figures_{};  // emit reports from then on
};

}  // namespace tokenspeed::metrics::python_bridge
