// python_bridge.cpp — the python.so output plugin: tsm_register runs every
// tokenspeed.plugins entry point's register() (through
// _tokenspeed_metrics_bridge.py) and declares the names each package kept;
// the reporter callbacks forward validate, start_node and create_sink to the
// package's Python functions. Never calls Python without the GIL.
#include <cstdlib>
#include <string>
#include <vector>

#include "python_interpreter.hpp"
#include "python_sink.hpp"

namespace tokenspeed::metrics::python_bridge {
namespace {

// Process-wide, set by tsm_register: the bridge module and MetricEvent.
// Never freed (the interpreter outlives every sink).
PyObject* bridge_module = nullptr;
PyObject* event_type = nullptr;

// The user_data of one declared reporter; lives for the process, as the
// host keeps reporters for its life.
struct ReporterHandle {
  PyObject* reporter = nullptr;  // a _tokenspeed_metrics_bridge.Reporter
};

PyObject* reporter_of(void* user_data) { return static_cast<ReporterHandle*>(user_data)->reporter; }

// obj.method(text) with the GIL held; a new reference or nullptr.
PyObject* call_with_text(PyObject* obj, const char* method, const char* text, size_t size) {
  return PyObject_CallMethod(obj, method, "s#", text, static_cast<Py_ssize_t>(size));
}

bool utf8_of(PyObject* text, std::string& out) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(text, &size);
  if (data == nullptr) return false;
  out.assign(data, static_cast<std::size_t>(size));
  return true;
}

int validate(void* user_data, const char* config, size_t size, tsm_buffer* normalized,
             tsm_buffer* error) noexcept {
  GilGuard gil;
  try {
    PyObject* result = call_with_text(reporter_of(user_data), "validate_json", config, size);
    if (result == nullptr) return fail_with_exception(error, "validate()");
    std::string text;
    const bool ok = utf8_of(result, text);
    Py_DECREF(result);
    if (!ok) return fail_with_exception(error, "validate()");
    assign(normalized, text);
    return TSM_OK;
  } catch (...) {
    PyErr_Clear();
    assign(error, "validate(): out of memory");
    return TSM_ERROR;
  }
}

int session_close(void* self, int64_t timeout_ns, tsm_buffer* error) noexcept {
  auto* session = static_cast<PyObject*>(self);
  GilGuard gil;
  int status = TSM_OK;
  PyObject* result =
      PyObject_CallMethod(session, "close", "d", static_cast<double>(timeout_ns) / 1e9);
  if (result == nullptr) {
    status = fail_with_exception(error, "session close() raised");
  } else {
    Py_DECREF(result);
  }
  Py_DECREF(session);
  return status;
}

const tsm_node_session_vtable kSessionVtable = {sizeof(tsm_node_session_vtable), &session_close};

int start_node(void* user_data, const char* config, size_t size, tsm_node_session* session,
               tsm_buffer* producer_config, tsm_buffer* error) noexcept {
  GilGuard gil;
  try {
    PyObject* result = call_with_text(reporter_of(user_data), "start_node_json", config, size);
    if (result == nullptr) return fail_with_exception(error, "start_node()");
    PyObject* session_object = nullptr;
    PyObject* producer_text = nullptr;
    std::string text;
    if (!PyArg_ParseTuple(result, "OU", &session_object, &producer_text) ||
        !utf8_of(producer_text, text)) {
      Py_DECREF(result);
      return fail_with_exception(error, "start_node()");
    }
    session->vtable = &kSessionVtable;
    session->self = Py_NewRef(session_object);
    Py_DECREF(result);
    assign(producer_config, text);
    return TSM_OK;
  } catch (...) {
    PyErr_Clear();
    assign(error, "start_node(): out of memory");
    return TSM_ERROR;
  }
}

int create_sink(void* user_data, const char* config, size_t size, tsm_sink* sink,
                tsm_buffer* error) noexcept {
  GilGuard gil;
  PyObject* result = call_with_text(reporter_of(user_data), "create_sink", config, size);
  if (result == nullptr) return fail_with_exception(error, "create_sink()");
  const int status = make_sink(result, event_type, sink, error);
  Py_DECREF(result);
  return status;
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

// Declares the reporters of one loaded package; "" or the host's rejection.
std::string declare_package(const tsm_host_api* host, PyObject* package) {
  PyObject* reporters = PyObject_GetAttrString(package, "reporters");
  if (reporters == nullptr || !PyList_Check(reporters)) {
    Py_XDECREF(reporters);
    return "bad package record: " + take_exception();
  }
  std::string problem;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(reporters) && problem.empty(); ++i) {
    PyObject* reporter = PyList_GET_ITEM(reporters, i);  // borrowed
    const std::string name = text_attribute(reporter, "name");
    PyObject* start = PyObject_GetAttrString(reporter, "start_node");
    PyObject* override_flag = PyObject_GetAttrString(reporter, "override");
    const bool has_start_node = start != nullptr && start != Py_None;
    const bool overrides = override_flag != nullptr && PyObject_IsTrue(override_flag) == 1;
    Py_XDECREF(start);
    Py_XDECREF(override_flag);
    PyErr_Clear();

    auto* handle = new ReporterHandle{Py_NewRef(reporter)};
    tsm_reporter_descriptor descriptor{};
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = name.c_str();
    descriptor.validate = &validate;
    descriptor.create_sink = &create_sink;
    descriptor.start_node = has_start_node ? &start_node : nullptr;
    descriptor.override = overrides ? 1U : 0U;
    descriptor.user_data = handle;
    struct Message {
      std::string text;
      static void set(tsm_buffer* buffer, const char* data, size_t size) {
        static_cast<Message*>(buffer->host_data)->text.assign(data, size);
      }
    } message;
    tsm_buffer buffer{sizeof(tsm_buffer), &message, &Message::set};
    if (host->register_metric_reporter(host->host_data, &descriptor, &buffer) != TSM_OK) {
      problem = text_attribute(package, "entry_point") + ": reporter '" + name +
                "': " + (message.text.empty() ? "rejected by the host" : message.text);
    }
  }
  Py_DECREF(reporters);
  return problem;
}

void log(const tsm_host_api* host, uint32_t level, const std::string& line) {
  if (host->log != nullptr) host->log(host->host_data, level, line.c_str());
}

int register_packages(const tsm_host_api* host, tsm_buffer* error) {
  GilGuard gil;
  if (std::string problem = import_bridge(); !problem.empty()) {
    assign(error, problem);
    return TSM_ERROR;
  }
  const char* disabled = std::getenv("TOKENSPEED_DISABLE_PLUGINS");
  PyObject* packages =
      PyObject_CallMethod(bridge_module, "discover", "s", disabled == nullptr ? "" : disabled);
  if (packages == nullptr || !PyList_Check(packages)) {
    Py_XDECREF(packages);
    return fail_with_exception(error, "discovering tokenspeed.plugins entry points");
  }
  std::string problem;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(packages) && problem.empty(); ++i) {
    PyObject* package = PyList_GET_ITEM(packages, i);  // borrowed
    const std::string status = text_attribute(package, "status");
    PyObject* title_object = PyObject_CallMethod(package, "title", nullptr);
    std::string title;
    if (title_object != nullptr) utf8_of(title_object, title);
    Py_XDECREF(title_object);
    PyErr_Clear();
    if (status == "loaded") {
      problem = declare_package(host, package);
    } else {
      // Disabled packages are quiet, as disabled plugin files are; the host
      // keeps the line to explain an unknown reporter either way.
      std::string line = title;
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
      log(host, status == "disabled" ? TSM_LOG_DEBUG : TSM_LOG_WARNING, line);
    }
  }
  Py_DECREF(packages);
  if (!problem.empty()) {
    assign(error, problem);
    return TSM_ERROR;
  }
  return TSM_OK;
}

}  // namespace
}  // namespace tokenspeed::metrics::python_bridge

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  using namespace tokenspeed::metrics::python_bridge;
  if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
  try {
    if (std::string problem = ensure_interpreter(); !problem.empty()) {
      assign(error, problem);
      return TSM_ERROR;
    }
    return register_packages(host, error);
  } catch (...) {
    assign(error, "out of memory while registering Python plugin packages");
    return TSM_ERROR;
  }
}
