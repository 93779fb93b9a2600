// native_state.hpp — the process-wide state of the Python module: this
// process's Launcher or Producer, the Recorder handles bind to, and the binding
// generation that a fork in the child advances so every cached handle
// rebinds to the child's own Producer. Touched with the GIL held.
// Tested in test/python/test_tokenspeed_metrics.py and
// test/python/test_close_and_signals.py.
#pragma once

#include <Python.h>

#include <cstdint>

#include <tokenspeed/metrics/metrics.hpp>

namespace tokenspeed::metrics::python {

// Advanced by start, attach, close and a fork in the child: a handle whose
// generation differs rebinds before it records. Close advancing it is what
// makes recording after close raise without a check on the hot path: the
// rebind finds the process closed.
extern std::uint64_t binding_generation;

// The Recorder of this process, attaching a Producer through the module's
// attach hook when none exists yet. Returns null with a Python exception set
// when there is none and none can be attached, or when close() ran
// (ClosedError).
Recorder* current_recorder();

// Turns the C++ exception in flight into the module's Python exception
// (StartupError, ValueError, RuntimeError); returns null for `return`.
PyObject* raise_from_cpp();

// The module's exception type for startup errors (reporter, file, key).
extern PyObject* startup_error_type;

// The module's exception type for recording (or starting) after close().
extern PyObject* closed_error_type;

// Module-level functions (native_state.cpp).
extern PyMethodDef state_functions[];

}  // namespace tokenspeed::metrics::python
