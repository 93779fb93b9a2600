// native_module.cpp — the _tokenspeed_metrics extension module: the handle
// types and the process functions; tokenspeed_metrics/__init__.py is the API.
// Tested in test/python/test_tokenspeed_metrics.py.
#include <Python.h>

#include "native_handles.hpp"
#include "native_idiom.hpp"
#include "native_state.hpp"

namespace {

PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    "_tokenspeed_metrics",
    "The native part of tokenspeed_metrics (use the tokenspeed_metrics package).",
    -1,
    tokenspeed::metrics::python::state_functions,
    nullptr,
    nullptr,
    nullptr,
    nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__tokenspeed_metrics() {
  using namespace tokenspeed::metrics::python;
  PyObject* module = PyModule_Create(&module_definition);
  if (module == nullptr) return nullptr;
  startup_error_type = PyErr_NewExceptionWithDoc(
      "tokenspeed_metrics.StartupError",
      "A startup error: args are (message, reporter, file, key), as the CLI names them.",
      PyExc_RuntimeError, nullptr);
  closed_error_type = PyErr_NewExceptionWithDoc(
      "tokenspeed_metrics.ClosedError",
      "Recording (or starting) after close() ran in this process: nothing is recorded after it.",
      PyExc_RuntimeError, nullptr);
  if (startup_error_type == nullptr || closed_error_type == nullptr ||
      PyModule_AddObjectRef(module, "StartupError", startup_error_type) < 0 ||
      PyModule_AddObjectRef(module, "ClosedError", closed_error_type) < 0 ||
      add_handle_types(module) < 0 || add_idiom_types(module) < 0) {
    Py_DECREF(module);
    return nullptr;
  }
  return module;
}
