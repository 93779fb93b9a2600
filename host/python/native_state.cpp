// native_state.cpp — start, attach, standalone recording, rendering, close
// and fork handling of the Python module. The GIL is released around every call that may block
// (plugin registration, start_node, shutdown), never around recording. Close is final for the
// process: every handle then raises ClosedError.
#include "native_state.hpp"

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace tokenspeed::metrics::python {

std::uint64_t binding_generation = 1;
PyObject* startup_error_type = nullptr;
PyObject* closed_error_type = nullptr;

namespace {

std::unique_ptr<Launcher> launcher;
std::unique_ptr<Producer> producer;
// The producer records standalone (prometheus_client's modes, no Launcher).
bool standalone = false;
Recorder* recorder = nullptr;
PyObject* attach_hook = nullptr;  // called when a handle needs a recorder
// Set by close(); a child forked afterwards keeps it (the launcher's run
// directory may be gone), until that child starts or attaches explicitly.
bool closed = false;
// Held while this process starts or attaches (the attach hook included), so
// that threads racing to the first recording attach once: the others wait
// here, then find the recorder. Always taken with the GIL released (the
// holder gives the GIL up while the Producer starts, so a waiter holding it
// would deadlock); recursive because the hook calls attach_producer. Never
// touched once a recorder exists. A pointer, so that a fork in the child can
// start from a free one whatever a parent thread held. Not an annotated
// Mutex (core/thread_safety.hpp): this module is built on include/ alone,
// and the lock is recursive.
std::recursive_mutex* attach_mutex = new std::recursive_mutex;

// Holds attach_mutex for a scope; waits for it without the GIL.
class AttachLock {
 public:
  AttachLock() : mutex_(attach_mutex) {
    if (mutex_->try_lock()) return;
    Py_BEGIN_ALLOW_THREADS mutex_->lock();
    Py_END_ALLOW_THREADS
  }
  ~AttachLock() { mutex_->unlock(); }
  AttachLock(const AttachLock&) = delete;
  AttachLock& operator=(const AttachLock&) = delete;

 private:
  std::recursive_mutex* mutex_;
};

constexpr const char* closed_message =
    "tokenspeed_metrics is closed: close() ran in this process (called, at exit, or on "
    "SIGTERM/SIGINT) or in the process it was forked from; nothing is recorded after it";

// start and attach: refused while this process has a Launcher or Producer.
bool refuse_second_start() {
  if (!launcher && !producer) return false;
  if (closed) {
    PyErr_Format(closed_error_type, "%s (metrics cannot start again in this process)",
                 closed_message);
  } else if (standalone) {
    PyErr_SetString(PyExc_RuntimeError,
                    "tokenspeed_metrics: this process already records standalone (as "
                    "prometheus_client does, without the host's outputs): call start() before "
                    "the first recording");
  } else {
    PyErr_SetString(PyExc_RuntimeError,
                    "tokenspeed_metrics: metrics are already started in this process");
  }
  return true;
}

// Every handle rebinds on its next use and finds no recorder: it raises.
void mark_closed() {
  closed = true;
  recorder = nullptr;
  ++binding_generation;
}

std::vector<std::string> string_list(PyObject* list) {
  std::vector<std::string> out;
  PyObject* fast = PySequence_Fast(list, "expected a sequence of str");
  if (fast == nullptr) throw std::invalid_argument("expected a sequence of str");
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_Fast_GET_ITEM(fast, i);
    const char* text = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : nullptr;
    if (text == nullptr) {
      Py_DECREF(fast);
      PyErr_Clear();
      throw std::invalid_argument("expected a sequence of str");
    }
    out.emplace_back(text);
  }
  Py_DECREF(fast);
  return out;
}

PyObject* to_list(const std::vector<std::string>& values) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(values.size()));
  if (list == nullptr) return nullptr;
  for (std::size_t i = 0; i < values.size(); ++i) {
    PyObject* item =
        PyUnicode_FromStringAndSize(values[i].data(), static_cast<Py_ssize_t>(values[i].size()));
    if (item == nullptr) {
      Py_DECREF(list);
      return nullptr;
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), item);
  }
  return list;
}

PyObject* report_to_python(const ShutdownReport& report) {
  PyObject* outputs = PyList_New(0);
  if (outputs == nullptr) return nullptr;
  for (const OutputReport& output : report.outputs) {
    PyObject* row = Py_BuildValue(
        "{s:s,s:i,s:s,s:K,s:K,s:K,s:K,s:K,s:K,s:O}", "process", output.process.c_str(), "pid",
        static_cast<int>(output.pid), "output", output.output.c_str(), "accepted",
        static_cast<unsigned long long>(output.accepted), "delivered",
        static_cast<unsigned long long>(output.delivered), "dropped_queue_full",
        static_cast<unsigned long long>(output.dropped_queue_full), "dropped_disabled",
        static_cast<unsigned long long>(output.dropped_disabled), "dropped_after_close",
        static_cast<unsigned long long>(output.dropped_after_close), "discarded_at_close",
        static_cast<unsigned long long>(output.discarded_at_close), "failed",
        output.failed ? Py_True : Py_False);
    // The plugin's own figures, or None when its plugin reports none.
    PyObject* plugin = Py_None;
    Py_INCREF(plugin);
    if (output.plugin_reported) {
      Py_DECREF(plugin);
      plugin = Py_BuildValue("{s:K,s:K,s:K,s:K,s:K}", "sent",
                             static_cast<unsigned long long>(output.plugin_sent), "refused",
                             static_cast<unsigned long long>(output.plugin_refused), "lost",
                             static_cast<unsigned long long>(output.plugin_lost), "retries",
                             static_cast<unsigned long long>(output.plugin_retries), "pending",
                             static_cast<unsigned long long>(output.plugin_pending));
    }
    if (row != nullptr && (plugin == nullptr || PyDict_SetItemString(row, "plugin", plugin) != 0)) {
      Py_DECREF(row);
      row = nullptr;
    }
    Py_XDECREF(plugin);
    if (row == nullptr || PyList_Append(outputs, row) != 0) {
      Py_XDECREF(row);
      Py_DECREF(outputs);
      return nullptr;
    }
    Py_DECREF(row);
  }
  PyObject* result = Py_BuildValue(
      "{s:N,s:O,s:d,s:s,s:K,s:K}", "outputs", outputs, "closed_in_time",
      report.closed_in_time ? Py_True : Py_False, "elapsed",
      std::chrono::duration<double>(report.elapsed).count(), "table", report.table.c_str(),
      "unstored_series", static_cast<unsigned long long>(report.unstored_series), "unstored_events",
      static_cast<unsigned long long>(report.unstored_events));
  return result;
}

// extract_metrics_flags(args) -> (metrics_flags, rest)
PyObject* extract_metrics_flags(PyObject*, PyObject* args_list) {
  try {
    const ExtractedOptions extracted = extract_metrics_options(string_list(args_list));
    PyObject* flags = to_list(extracted.options.to_flags());
    PyObject* rest = to_list(extracted.rest);
    if (flags == nullptr || rest == nullptr) {
      Py_XDECREF(flags);
      Py_XDECREF(rest);
      return nullptr;
    }
    return Py_BuildValue("(NN)", flags, rest);
  } catch (...) {
    return raise_from_cpp();
  }
}

// start(argv) -> (producer environment [name, value, ...], rest, enabled): the
// launcher (or only) process. The options are parsed once, by the table of
// flags: from argv when it is a list (its other arguments are returned as
// rest), from the TOKENSPEED_METRICS_* environment when it is None.
PyObject* start(PyObject*, PyObject* argv) {
  AttachLock attaching;
  if (refuse_second_start()) return nullptr;
  try {
    ExtractedOptions extracted;
    const bool from_environment = argv == Py_None;
    if (from_environment) {
      extracted.options = metrics_options_from_environment();
    } else {
      extracted = extract_metrics_options(string_list(argv));
    }
    std::unique_ptr<Launcher> started;
    std::exception_ptr failure;
    Py_BEGIN_ALLOW_THREADS try {
      started = std::make_unique<Launcher>(extracted.options);
    } catch (...) {
      failure = std::current_exception();
    }
    Py_END_ALLOW_THREADS if (failure) std::rethrow_exception(failure);
    launcher = std::move(started);
    recorder = &launcher->recorder();
    closed = false;
    ++binding_generation;
    PyObject* environment = to_list([] {
      std::vector<std::string> flat;
      for (const auto& [name, value] : launcher->producer_environment()) {
        flat.push_back(name);
        flat.push_back(value);
      }
      return flat;
    }());
    PyObject* rest = from_environment ? Py_NewRef(Py_None) : to_list(extracted.rest);
    if (environment == nullptr || rest == nullptr) {
      Py_XDECREF(environment);
      Py_XDECREF(rest);
      return nullptr;
    }
    return Py_BuildValue("(NNO)", environment, rest,
                         extracted.options.enable_metrics ? Py_True : Py_False);
  } catch (...) {
    return raise_from_cpp();
  }
}

// Makes this process's Producer (attached, or standalone with shared_dir).
PyObject* make_producer(PyObject* name, const StandaloneRecording* standalone_recording) {
  AttachLock attaching;
  if (refuse_second_start()) return nullptr;
  const char* text = PyUnicode_AsUTF8(name);
  if (text == nullptr) return nullptr;
  try {
    std::unique_ptr<Producer> made;
    std::exception_ptr failure;
    const std::string producer_name(text);
    Py_BEGIN_ALLOW_THREADS try {
      made = standalone_recording ? std::make_unique<Producer>(producer_name, *standalone_recording)
                                  : std::make_unique<Producer>(producer_name);
    } catch (...) {
      failure = std::current_exception();
    }
    Py_END_ALLOW_THREADS if (failure) std::rethrow_exception(failure);
    producer = std::move(made);
    standalone = standalone_recording != nullptr;
    recorder = &producer->recorder();
    closed = false;
    ++binding_generation;
    return PyBool_FromLong(producer->enabled() ? 1 : 0);
  } catch (...) {
    return raise_from_cpp();
  }
}

// attach_producer(name): a process the engine started.
PyObject* attach_producer(PyObject*, PyObject* name) { return make_producer(name, nullptr); }

// record_standalone(name, shared_dir): no launcher; shared_dir "" keeps the
// series in this process's memory.
PyObject* record_standalone(PyObject*, PyObject* args) {
  PyObject* name = nullptr;
  const char* shared_dir = nullptr;
  if (!PyArg_ParseTuple(args, "Us", &name, &shared_dir)) return nullptr;
  const StandaloneRecording standalone_recording{shared_dir};
  return make_producer(name, &standalone_recording);
}

// close(budget_seconds or None) -> report dict; None when nothing started.
PyObject* close_metrics(PyObject*, PyObject* budget) {
  AttachLock attaching;  // a close racing an attach closes what it attached
  if (!launcher && !producer) Py_RETURN_NONE;
  try {
    const bool default_budget = budget == Py_None;
    const double seconds = default_budget ? 0.0 : PyFloat_AsDouble(budget);
    if (!default_budget && seconds == -1.0 && PyErr_Occurred()) return nullptr;
    const auto duration = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(seconds));
    // Before the GIL is released: a Python thread recording while the
    // outputs drain gets ClosedError, not a silent drop.
    mark_closed();
    ShutdownReport report;
    Py_BEGIN_ALLOW_THREADS if (launcher) {
      report = default_budget ? launcher->close() : launcher->close(duration);
    }
    else {
      report = default_budget ? producer->close() : producer->close(duration);
    }
    Py_END_ALLOW_THREADS return report_to_python(report);
  } catch (...) {
    return raise_from_cpp();
  }
}

PyObject* role(PyObject*, PyObject*) {
  if (launcher) return PyUnicode_FromString("launcher");
  if (producer) return PyUnicode_FromString(standalone ? "standalone" : "producer");
  Py_RETURN_NONE;
}

PyObject* metrics_url(PyObject*, PyObject*) {
  if (!launcher) return PyUnicode_FromString("");
  return PyUnicode_FromString(launcher->metrics_url().c_str());
}

// Renders without the GIL: a scrape never stops the engine's threads.
PyObject* rendered(const std::function<std::string()>& render) {
  try {
    std::string text;
    std::exception_ptr failure;
    Py_BEGIN_ALLOW_THREADS try { text = render(); } catch (...) {
      failure = std::current_exception();
    }
    Py_END_ALLOW_THREADS if (failure) std::rethrow_exception(failure);
    return PyUnicode_FromStringAndSize(text.data(), static_cast<Py_ssize_t>(text.size()));
  } catch (...) {
    return raise_from_cpp();
  }
}

// The exposition of every process of this one's node or shared directory,
// from any process that records (single-process: its own series).
PyObject* render_metrics(PyObject*, PyObject*) {
  if (launcher) return rendered([] { return launcher->render_metrics(); });
  if (producer) return rendered([] { return producer->render_metrics(); });
  PyErr_SetString(PyExc_RuntimeError,
                  "tokenspeed_metrics: this process records nothing yet (render_directory reads "
                  "a shared directory)");
  return nullptr;
}

// render_directory(path): the processes that record into path.
PyObject* render_directory(PyObject*, PyObject* path) {
  const char* text = PyUnicode_AsUTF8(path);
  if (text == nullptr) return nullptr;
  const std::string directory(text);
  return rendered([&directory] { return render_metric_files(directory); });
}

PyObject* metrics_help(PyObject*, PyObject*) {
  return PyUnicode_FromString(metrics_options_help().c_str());
}

PyObject* set_attach_hook(PyObject*, PyObject* hook) {
  Py_XINCREF(hook);
  Py_XSETREF(attach_hook, hook);
  Py_RETURN_NONE;
}

// In a forked child the parent's Launcher or Producer is a copy whose threads do
// not exist: it is left alone (never closed or destroyed here), and every
// handle rebinds to the Producer this process attaches (or raises ClosedError
// when the parent had closed).
PyObject* after_fork_in_child(PyObject*, PyObject*) {
  // The parent's mutex may have been held by a thread the child does not
  // have: it is left as it is, never unlocked or destroyed.
  attach_mutex = new std::recursive_mutex;
  static_cast<void>(launcher.release());
  static_cast<void>(producer.release());
  standalone = false;
  recorder = nullptr;
  ++binding_generation;
  Py_RETURN_NONE;
}

}  // namespace

Recorder* current_recorder() {
  if (recorder != nullptr) return recorder;
  if (closed) {
    PyErr_SetString(closed_error_type, closed_message);
    return nullptr;
  }
  if (attach_hook == nullptr || attach_hook == Py_None) {
    PyErr_SetString(PyExc_RuntimeError, "tokenspeed_metrics: metrics are not started");
    return nullptr;
  }
  // One thread attaches; a thread that waited here finds the recorder it
  // made (or the same failure, raised by its own call of the hook).
  AttachLock attaching;
  if (recorder != nullptr) return recorder;
  if (closed) {
    PyErr_SetString(closed_error_type, closed_message);
    return nullptr;
  }
  PyObject* result = PyObject_CallNoArgs(attach_hook);
  if (result == nullptr) return nullptr;
  Py_DECREF(result);
  if (recorder == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "tokenspeed_metrics: the attach hook started nothing");
  }
  return recorder;
}

PyObject* raise_from_cpp() {
  try {
    throw;
  } catch (const StartupError& error) {
    PyObject* args = Py_BuildValue("(ssss)", error.what(), error.reporter().c_str(),
                                   error.file().c_str(), error.key().c_str());
    if (args != nullptr) {
      PyErr_SetObject(startup_error_type, args);
      Py_DECREF(args);
    }
  } catch (const std::invalid_argument& error) {
    PyErr_SetString(PyExc_ValueError, error.what());
  } catch (const std::exception& error) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, error.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "tokenspeed_metrics: unknown error");
  }
  return nullptr;
}

PyMethodDef state_functions[] = {
    {"extract_metrics_flags", extract_metrics_flags, METH_O,
     "extract_metrics_flags(args) -> (metrics_flags, rest)"},
    {"start", start, METH_O,
     "start(argv or None) -> ([name, value, ...] of the producer environment, rest, enabled)"},
    {"attach_producer", attach_producer, METH_O, "attach_producer(name) -> enabled"},
    {"record_standalone", record_standalone, METH_VARARGS,
     "record_standalone(name, shared_dir) -> True: no launcher, shared_dir or memory"},
    {"render_directory", render_directory, METH_O,
     "render_directory(path) -> the exposition of the processes recording there"},
    {"close", close_metrics, METH_O, "close(budget_seconds or None) -> report"},
    {"role", role, METH_NOARGS, "'launcher', 'producer', 'standalone' or None"},
    {"metrics_url", metrics_url, METH_NOARGS, "the /metrics URL, or ''"},
    {"render_metrics", render_metrics, METH_NOARGS,
     "the exposition of this process's node or shared directory"},
    {"metrics_help", metrics_help, METH_NOARGS, "the metrics flags' help"},
    {"set_attach_hook", set_attach_hook, METH_O, "hook() attaches when a handle needs it"},
    {"after_fork_in_child", after_fork_in_child, METH_NOARGS, "os.register_at_fork hook"},
    {nullptr, nullptr, 0, nullptr},
};

}  // namespace tokenspeed::metrics::python
