// python_sink.hpp — a Python sink object behind the C ABI sink vtable: each
// event becomes a read-only MetricEvent passed to sink.emit with the GIL held
// for that call only. Never touches Python without the GIL.
#pragma once

#include "python_interpreter.hpp"

namespace tokenspeed::metrics::python_bridge {

// Takes the (sink, emit, close) tuple returned by Reporter.create_sink and
// the MetricEvent type; fills sink. Requires the GIL. Returns TSM_OK or
// TSM_ERROR with a message in error.
int make_sink(PyObject* sink_tuple, PyObject* event_type, tsm_sink* sink,
              tsm_buffer* error) noexcept;

}  // namespace tokenspeed::metrics::python_bridge
