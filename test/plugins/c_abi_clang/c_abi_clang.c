/* c_abi_clang.c — a well-behaved output, 'c_abi_clang', written in plain C99
 * and compiled by clang, while the host is compiled by g++. Its validate
 * answers {"compiled_by": "clang", "settings": <the configuration given>}. */
#include <stdlib.h>
#include <string.h>

#include <tokenspeed/metric_reporter.h>

#ifndef __clang__
#error "this plugin is meant to be compiled by clang"
#endif

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  static const char head[] = "{\"compiled_by\": \"clang\", \"settings\": ";
  static const char nomem[] = "out of memory";
  size_t head_size = sizeof head - 1;
  char *json;
  (void)user_data;
  json = (char *)malloc(head_size + size + 1);
  if (json == NULL) {
    error->assign(error, nomem, sizeof nomem - 1);
    return TSM_ERROR;
  }
  memcpy(json, head, head_size);
  memcpy(json + head_size, config, size);
  json[head_size + size] = '}';
  normalized->assign(normalized, json, head_size + size + 1);
  free(json);
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
  if (host->struct_size < sizeof(tsm_host_api)) return TSM_UNSUPPORTED_API;
  if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
  memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = "c_abi_clang";
  descriptor.validate = validate;
  descriptor.create_sink = create_sink;
  descriptor.start_node = NULL;
  descriptor.override = 0;
  descriptor.user_data = NULL;
  return host->register_metric_reporter(host->host_data, &descriptor, error);
}
