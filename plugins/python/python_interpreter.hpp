// python_interpreter.hpp — the CPython interpreter the bridge runs plugins in:
// the host process's own one inside a Python engine, else one embedded here.
// Never finalizes the interpreter and never runs Python without the GIL.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <string>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::python_bridge {

// Makes an interpreter usable from any thread: when the process has none,
// promotes libpython to global symbol scope (extension modules bind to it),
// initializes one (signal handlers left to the host; VIRTUAL_ENV honoured)
// and releases the GIL. Returns "" or why Python cannot run.
// Threading: called from tsm_register only (the host's startup thread).
std::string ensure_interpreter() noexcept;

// Gives a thread that has no Python thread state (a host worker) one that
// lives as long as the thread: PyGILState_Release would otherwise create and
// destroy a thread state on every call, several microseconds each.
void keep_thread_state() noexcept;

// Holds the GIL for one scope, on any thread (PyGILState_Ensure/Release).
class GilGuard {
 public:
  GilGuard() noexcept : state_((keep_thread_state(), PyGILState_Ensure())) {}
  ~GilGuard() { PyGILState_Release(state_); }
  GilGuard(const GilGuard&) = delete;
  GilGuard& operator=(const GilGuard&) = delete;

 private:
  PyGILState_STATE state_;
};

// The pending Python exception as one line ("TypeError: ..."), cleared.
// Requires the GIL.
std::string take_exception() noexcept;

// Writes text into a host buffer. Safe with a null buffer.
void assign(tsm_buffer* buffer, const std::string& text) noexcept;

// The pending exception into error, prefixed with what failed; returns
// TSM_ERROR. Requires the GIL.
int fail_with_exception(tsm_buffer* error, const char* what) noexcept;

// The folder holding _tokenspeed_metrics_bridge.py and this project's
// tokenspeed.runtime.metrics modules: "python/" beside this plugin file when
// installed, else the source folder the build tree was made from.
std::string bridge_module_dir() noexcept;

}  // namespace tokenspeed::metrics::python_bridge
