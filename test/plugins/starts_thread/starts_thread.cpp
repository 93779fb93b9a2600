// starts_thread.cpp — models a plugin that breaks the registration rule by
// starting a thread inside tsm_register (after declaring 'threaded_output').
#include <chrono>
#include <cstring>
#include <thread>

#include <tokenspeed/metric_reporter.h>

namespace {

int validate(void*, const char* config, size_t size, tsm_buffer* normalized, tsm_buffer*) {
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

int emit(void*, const tsm_metric_event*, tsm_buffer*) { return TSM_OK; }

int close_sink(void*, int64_t, tsm_buffer*) { return TSM_OK; }

const tsm_sink_vtable kSinkVtable = {sizeof(tsm_sink_vtable), emit, close_sink};

int create_sink(void*, const char*, size_t, tsm_sink* sink, tsm_buffer*) {
  sink->vtable = &kSinkVtable;
  sink->self = nullptr;
  return TSM_OK;
}

}  // namespace

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
  tsm_reporter_descriptor descriptor;
  std::memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = "threaded_output";
  descriptor.validate = validate;
  descriptor.create_sink = create_sink;
  descriptor.start_node = nullptr;
  const int status = host->register_metric_reporter(host->host_data, &descriptor, error);
  if (status != TSM_OK) return status;
  // The background thread a careless SDK might start at import time. It
  // sleeps until the process exits.
  std::thread([] {
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }).detach();
  return TSM_OK;
}
