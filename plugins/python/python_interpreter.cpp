// python_interpreter.cpp — embedding CPython when the host has no interpreter,
// the GIL guard and exception text. Never calls into a plugin package.
#include "python_interpreter.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#ifndef TSM_PYTHON_LIBRARY
#define TSM_PYTHON_LIBRARY "libpython3.11.so.1.0"
#endif
#ifndef TSM_PYTHON_BRIDGE_SOURCE_DIR
#define TSM_PYTHON_BRIDGE_SOURCE_DIR ""
#endif

namespace tokenspeed::metrics::python_bridge {
namespace {

// Python 3.13 made _Py_IsFinalizing public as Py_IsFinalizing.
bool interpreter_finalizing() noexcept {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

std::string config_error(const char* what, PyStatus status) {
  std::string message = std::string("cannot initialize the Python interpreter: ") + what;
  if (status.err_msg != nullptr) message += std::string(": ") + status.err_msg;
  return message;
}

std::string initialize_embedded() {
  // python.so and libpython were loaded RTLD_LOCAL; the extension modules of
  // the standard library expect Py* symbols in the global scope.
  if (::dlopen(TSM_PYTHON_LIBRARY, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == nullptr) {
    const char* detail = ::dlerror();
    return std::string("cannot make ") + TSM_PYTHON_LIBRARY +
           " global: " + (detail != nullptr ? detail : "not loaded");
  }
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // SIGINT/SIGTERM stay the host's
  config.parse_argv = 0;
  config.buffered_stdio = 0;
  PyStatus status = PyStatus_Ok();
  // An activated virtual environment is the environment plugins live in:
  // its interpreter path makes site.py read its pyvenv.cfg.
  if (const char* venv = std::getenv("VIRTUAL_ENV"); venv != nullptr && *venv != '\0') {
    const std::string executable = std::string(venv) + "/bin/python3";
    status = PyConfig_SetBytesString(&config, &config.executable, executable.c_str());
    if (PyStatus_Exception(status)) {
      PyConfig_Clear(&config);
      return config_error("VIRTUAL_ENV", status);
    }
  }
  status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) return config_error("Py_InitializeFromConfig", status);
  return {};
}

// The thread state keep_thread_state made for this thread, released when the
// thread ends (unless the interpreter is going away then).
struct KeptThreadState {
  PyThreadState* state = nullptr;
  ~KeptThreadState() {
    if (state == nullptr || !Py_IsInitialized() || interpreter_finalizing()) return;
    PyEval_RestoreThread(state);
    PyGILState_Release(PyGILState_UNLOCKED);  // deletes it and drops the GIL
  }
};

}  // namespace

void keep_thread_state() noexcept {
  thread_local KeptThreadState kept;
  if (kept.state != nullptr || PyGILState_GetThisThreadState() != nullptr) return;
  (void)PyGILState_Ensure();  // a new thread state, the GIL taken
  kept.state = PyThreadState_Get();
  (void)PyEval_SaveThread();  // the GIL dropped, the state (count 1) kept
}

std::string ensure_interpreter() noexcept {
  try {
    if (Py_IsInitialized()) {
      // The host's own interpreter: it must be the version this file was
      // built against (the C API of another minor version differs).
      const std::string running = Py_GetVersion();
      const std::string built =
          std::to_string(PY_MAJOR_VERSION) + "." + std::to_string(PY_MINOR_VERSION) + ".";
      if (running.compare(0, built.size(), built) != 0) {
        return "the process runs Python " + running.substr(0, running.find(' ')) +
               "; this plugin is built for Python " + built.substr(0, built.size() - 1);
      }
      return {};
    }
    std::string problem = initialize_embedded();
    if (!problem.empty()) return problem;
    // The GIL is taken again per call with PyGILState_Ensure, on any thread.
    (void)PyEval_SaveThread();
    return {};
  } catch (...) {
    return "cannot initialize the Python interpreter: out of memory";
  }
}

std::string take_exception() noexcept {
  PyObject* type = nullptr;
  PyObject* value = nullptr;
  PyObject* traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  if (type == nullptr) return "unknown Python error";
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string text;
  try {
    PyObject* name = PyObject_GetAttrString(type, "__name__");
    if (name != nullptr && PyUnicode_Check(name)) text = PyUnicode_AsUTF8(name);
    Py_XDECREF(name);
    PyObject* message = value != nullptr ? PyObject_Str(value) : nullptr;
    if (message != nullptr) {
      const char* utf8 = PyUnicode_AsUTF8(message);
      if (utf8 != nullptr && *utf8 != '\0') text += std::string(": ") + utf8;
    }
    Py_XDECREF(message);
    PyErr_Clear();
    for (char& c : text) {
      if (c == '\n' || c == '\r') c = ' ';
    }
  } catch (...) {
    text = "Python error";
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  return text.empty() ? "Python error" : text;
}

void throw_python_error(const char* what) {
  throw std::runtime_error(std::string(what) + ": " + take_exception());
}

std::string bridge_module_dir() noexcept {
  try {
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&bridge_module_dir), &info) != 0 &&
        info.dli_fname != nullptr) {
      std::string path = info.dli_fname;
      const std::size_t slash = path.rfind('/');
      std::string installed =
          (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/python";
      const std::string marker = installed + "/_tokenspeed_metrics_bridge.py";
      if (::access(marker.c_str(), R_OK) == 0) return installed;
    }
    return TSM_PYTHON_BRIDGE_SOURCE_DIR;
  } catch (...) {
    return TSM_PYTHON_BRIDGE_SOURCE_DIR;
  }
}

}  // namespace tokenspeed::metrics::python_bridge
