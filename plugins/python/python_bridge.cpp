// python_bridge.cpp — the python.so output plugin: tsm_register runs every
// tokenspeed.plugins entry point's register() (through
// _tokenspeed_metrics_bridge.py) and declares the names each package kept
// through the kit's Registrar, one plugin::Reporter per name whose callbacks
// forward validate, start_node and create_sink to the package's Python
// functions. Never calls Python without the GIL.
// Tested in test/python_plugins/test_python_plugins.py and
// test/python_plugins/test_python_engine.py.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include <tokenspeed/metric_reporter.hpp>

#include "python_interpreter.hpp"
#include "python_sink.hpp"

namespace tokenspeed::metrics::python_bridge {
namespace {

// Process-wide, set by tsm_register: the bridge module and MetricEvent.
// Never freed (the interpreter outlives every sink).
PyObject* bridge_module = nullptr;
PyObject* event_type = nullptr;

// obj.method(text) with the GIL held; a new reference or nullptr.
PyObject* call_with_text(PyObject* obj, const char* method, std::string_view text) {
  return PyObject_CallMethod(obj, method, "s#", text.data(), static_cast<Py_ssize_t>(text.size()));
}

bool utf8_of(PyObject* text, std::string& out) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) return false;
  out.assign(data, static_cast<std::size_t>(size));
  return true;
}

// The session start_node returned, and the producer configuration beside it.
class PythonSession {
 public:
  PythonSession(PyObject* session, std::string producer_config)
      : session_(Py_NewRef(session)), producer_config_(std::move(producer_config)) {}
  ~PythonSession() {
    GilGuard gil;
    Py_DECREF(session_);
  }
  PythonSession(const PythonSession&) = delete;
  PythonSession& operator=(const PythonSession&) = delete;

  std::string producer_config() const { return producer_config_; }

  void close(std::chrono::nanoseconds timeout) {
    GilGuard gil;
    PyObject* result = PyObject_CallMethod(session_, "close", "d", seconds(timeout));
    if (result == nullptr) throw_python_error("session close() raised");
    Py_DECREF(result);
  }

 private:
  PyObject* session_;
  std::string producer_config_;
};

using PythonReporter = plugin::Reporter<PythonSink, PythonSession>;

// The reporter's callbacks, forwarded to a _tokenspeed_metrics_bridge.Reporter
// (a reference kept for the process, as the host keeps reporters for its life).
PythonReporter forwarding_reporter(PyObject* reporter, std::string name, std::string version,
                                   bool has_start_node, bool overrides) {
  PythonReporter out;
  out.name = std::move(name);
  out.version = std::move(version);  // the package's distribution version
  out.override_existing = overrides;
  out.validate = [reporter](std::string_view config) {
    return with_gil("validate()", [&] {
      PyObject* result = call_with_text(reporter, "validate_json", config);
      if (result == nullptr) throw_python_error("validate()");
      std::string text;
      const bool ok = utf8_of(result, text);
      Py_DECREF(result);
      if (!ok) throw_python_error("validate()");
      return text;
    });
  };
  out.create_sink = [reporter](std::string_view config, const plugin::Host& host) {
    return with_gil("create_sink", [&] {
      PyObject* result = call_with_text(reporter, "create_sink", config);
      if (result == nullptr) throw_python_error("create_sink()");
      try {
        auto sink = std::make_unique<PythonSink>(result, event_type, host);
        Py_DECREF(result);
        return sink;
      } catch (...) {
        Py_DECREF(result);
        throw;
      }
    });
  };
  if (!has_start_node) return out;
  out.start_node = [reporter](std::string_view config, const plugin::Host&) {
    return with_gil("start_node()", [&] {
      PyObject* result = call_with_text(reporter, "start_node_json", config);
      if (result == nullptr) throw_python_error("start_node()");
      PyObject* session = nullptr;
      PyObject* producer_text = nullptr;
      std::string text;
      if (!PyArg_ParseTuple(result, "OU", &session, &producer_text) ||
          !utf8_of(producer_text, text)) {
        Py_DECREF(result);
        throw_python_error("start_node()");
      }
      std::unique_ptr<PythonSession> started;
      try {
        started = std::make_unique<PythonSession>(session, std::move(text));
      } catch (...) {
        Py_DECREF(result);
        throw;
      }
      Py_DECREF(result);
      return started;
    });
  };
  return out;
}

std::string text_attribute(PyObject* obj, const char* name) {
  PyObject* value = PyObject_GetAttrString(obj, name);
  std::string text;
  if (value != nullptr && PyUnicode_Check(value)) utf8_of(value, text);
  Py_XDECREF(value);
  PyErr_Clear();
  return text;
}

// Imports the bridge module from its folder; "" or the reason.
std::string import_bridge() {
  if (bridge_module != nullptr) return {};
  const std::string dir = bridge_module_dir();
  PyObject* path = PySys_GetObject("path");  // borrowed
  PyObject* entry = PyUnicode_FromString(dir.c_str());
  if (path == nullptr || entry == nullptr || PySequence_Contains(path, entry) < 0 ||
      PyList_Insert(path, 0, entry) != 0) {
    Py_XDECREF(entry);
    return "cannot extend sys.path: " + take_exception();
  }
  Py_DECREF(entry);
  bridge_module = PyImport_ImportModule("_tokenspeed_metrics_bridge");
  // The folder served only to import the bridge; the bridge adds its own
  // modules at the end of sys.path.
  if (PySequence_DelItem(path, 0) != 0) PyErr_Clear();
  if (bridge_module == nullptr) {
    return "cannot import _tokenspeed_metrics_bridge from '" + dir + "': " + take_exception();
  }
  event_type = PyObject_GetAttrString(bridge_module, "MetricEvent");
  if (event_type == nullptr || !PyType_Check(event_type)) {
    return "the bridge module has no MetricEvent type: " + take_exception();
  }
  return {};
}

// Declares the reporters of one loaded package; throws with the host's
// rejection.
void declare_package(plugin::Registrar& registrar, PyObject* package) {
  PyObject* reporters = PyObject_GetAttrString(package, "reporters");
  if (reporters == nullptr || !PyList_Check(reporters)) {
    Py_XDECREF(reporters);
    throw std::runtime_error("bad package record: " + take_exception());
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(reporters); ++i) {
    PyObject* reporter = PyList_GET_ITEM(reporters, i);  // borrowed
    const std::string name = text_attribute(reporter, "name");
    PyObject* start = PyObject_GetAttrString(reporter, "start_node");
    PyObject* override_flag = PyObject_GetAttrString(reporter, "override");
    const bool has_start_node = start != nullptr && start != Py_None;
    const bool overrides = override_flag != nullptr && PyObject_IsTrue(override_flag) == 1;
    Py_XDECREF(start);
    Py_XDECREF(override_flag);
    PyErr_Clear();
    try {
      registrar.add(forwarding_reporter(Py_NewRef(reporter), name,
                                        text_attribute(package, "version"), has_start_node,
                                        overrides));
    } catch (const std::runtime_error& e) {
      Py_DECREF(reporters);
      throw std::runtime_error(text_attribute(package, "entry_point") + ": reporter '" + name +
                               "': " + e.what());
    }
  }
  Py_DECREF(reporters);
}

// Runs every package's register() and declares the names each kept; logs
// the packages that did not load.
void register_packages(plugin::Registrar& registrar) {
  GilGuard gil;
  if (std::string problem = import_bridge(); !problem.empty()) throw std::runtime_error(problem);
  const char* disabled = std::getenv("TOKENSPEED_DISABLE_PLUGINS");
  PyObject* packages =
      PyObject_CallMethod(bridge_module, "discover", "s", disabled == nullptr ? "" : disabled);
  if (packages == nullptr || !PyList_Check(packages)) {
    Py_XDECREF(packages);
    throw_python_error("discovering tokenspeed.plugins entry points");
  }
  try {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(packages); ++i) {
      PyObject* package = PyList_GET_ITEM(packages, i);  // borrowed
      const std::string status = text_attribute(package, "status");
      if (status == "loaded") {
        declare_package(registrar, package);
        continue;
      }
      PyObject* title_object = PyObject_CallMethod(package, "title", nullptr);
      std::string line;
      if (title_object != nullptr) utf8_of(title_object, line);
      Py_XDECREF(title_object);
      PyErr_Clear();
      // Disabled packages are quiet, as disabled plugin files are; the host
      // keeps the line to explain an unknown reporter either way.
      line += " is " + status;
      line += ": " + text_attribute(package, "reason");
      PyObject* attempted = PyObject_GetAttrString(package, "attempted");
      if (attempted != nullptr && PyList_Check(attempted) && PyList_GET_SIZE(attempted) > 0) {
        line += " (its names:";
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(attempted); ++j) {
          std::string name;
          if (utf8_of(PyList_GET_ITEM(attempted, j), name)) line += " '" + name + "'";
        }
        line += ")";
      }
      Py_XDECREF(attempted);
      PyErr_Clear();
      registrar.host().log(status == "disabled" ? TSM_LOG_DEBUG : TSM_LOG_WARNING, line);
    }
  } catch (...) {
    Py_DECREF(packages);
    throw;
  }
  Py_DECREF(packages);
}

}  // namespace
}  // namespace tokenspeed::metrics::python_bridge

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  namespace bridge = tokenspeed::metrics::python_bridge;
  namespace plugin = tokenspeed::metrics::plugin;
  return plugin::register_reporters(host, error, [](plugin::Registrar& registrar) {
    try {
      if (std::string problem = bridge::ensure_interpreter(); !problem.empty())
        throw std::runtime_error(problem);
      bridge::register_packages(registrar);
    } catch (const std::bad_alloc&) {
      throw std::runtime_error("out of memory while registering Python plugin packages");
    }
  });
}
