/* vendor_output.c — a minimal third-party output, 'vendor_output', built
 * outside the tokenspeed-metrics tree from the installed header alone. */
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  (void)user_data;
  (void)error;
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  (void)self;
  (void)event;
  (void)error;
  return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
  (void)self;
  (void)timeout_ns;
  (void)error;
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, close_sink};

static int create_sink(void *user_data, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  (void)user_data;
  (void)config;
  (void)size;
  (void)error;
  sink->vtable = &sink_vtable;
  sink->self = NULL;
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor;
  if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
  memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = "vendor_output";
  descriptor.validate = validate;
  descriptor.create_sink = create_sink;
  descriptor.start_node = NULL;
  return host->register_metric_reporter(host->host_data, &descriptor, error);
}
