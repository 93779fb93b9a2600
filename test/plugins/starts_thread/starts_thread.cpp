// starts_thread.cpp — models a plugin that breaks the registration rule by
// starting a thread inside tsm_register (after declaring 'threaded_output').
#include <chrono>
#include <thread>

#include "test_plugin_common.h"

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  const int status =
      test_plugin_register(host, "threaded_output", test_plugin_validate_echo, error);
  if (status != TSM_OK) return status;
  // The background thread a careless SDK might start at import time. It
  // sleeps until the process exits.
  std::thread([] {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }).detach();
  return TSM_OK;
}
