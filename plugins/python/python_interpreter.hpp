// python_interpreter.hpp — the CPython interpreter the bridge runs plugins in:
// the host process's own one inside a Python engine, else one embedded here.
// Never finalizes the interpreter and never runs Python without the GIL.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <chrono>
#include <new>
#include <stdexcept>
#include <string>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::python_bridge {

// Makes an interpreter usable from any thread: when the process has none,
// promotes libpython to global symbol scope (extension modules bind to it),
// initializes one (signal handlers left to the host; VIRTUAL_ENV honoured)
// and releases the GIL. Returns "" or why Python cannot run.
// Threading: called from tsm_register only (the host's startup thread).
std::string ensure_interpreter() noexcept;

// Gives a thread that has no Python thread state (a host delivery thread) one that
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

// Throws std::runtime_error with the pending exception, prefixed with what
// failed ("validate(): ValueError: ..."), which the kit's trampolines hand to
// the host as the error. Requires the GIL.
[[noreturn]] void throw_python_error(const char* what);

// Runs body with the GIL held; out of memory becomes "<what>: out of memory".
template <class Body>
auto with_gil(const char* what, Body&& body) {
  GilGuard gil;
  try {
    return body();
  } catch (const std::bad_alloc&) {
    PyErr_Clear();
    throw std::runtime_error(std::string(what) + ": out of memory");
  }
}

// A close timeout in seconds, as the Python side takes it.
inline double seconds(std::chrono::nanoseconds timeout) noexcept {
  return static_cast<double>(timeout.count()) / 1e9;
}

// The folder holding _tokenspeed_metrics_bridge.py and this project's
// tokenspeed.runtime.metrics modules: "python/" beside this plugin file when
// installed, else the source folder the build tree was made from.
std::string bridge_module_dir() noexcept;

}  // namespace tokenspeed::metrics::python_bridge
