/* test_plugin_common.h — the pieces every test plugin shares: an echo validate,
 * a sink that does nothing, descriptor defaults and a version-checked register.
 * Test code only, never shipped; includes nothing but the ABI and libc. */
#ifndef TSM_TEST_PLUGIN_COMMON_H
#define TSM_TEST_PLUGIN_COMMON_H

#include <stdlib.h>

#include <string.h>

#include <tokenspeed/metric_reporter.h>

typedef int (*test_plugin_validate_fn)(void *user_data, const char *config, size_t size,
                                       tsm_buffer *normalized, tsm_buffer *error);

/* Writes text into buffer and returns TSM_OK. */
static inline int test_plugin_answer(tsm_buffer *buffer, const char *text) {
  buffer->assign(buffer, text, strlen(text));
  return TSM_OK;
}

/* Writes message into error and returns TSM_ERROR. */
static inline int test_plugin_fail(tsm_buffer *error, const char *message) {
  error->assign(error, message, strlen(message));
  return TSM_ERROR;
}

/* validate that accepts any settings and answers them unchanged. */
static inline int test_plugin_validate_echo(void *user_data, const char *config, size_t size,
                                            tsm_buffer *normalized, tsm_buffer *error) {
  (void)user_data;
  (void)error;
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

/* Sink emit and close (and node session close) that do nothing. */
static inline int test_plugin_emit_nothing(void *self, const tsm_metric_event *event,
                                           tsm_buffer *error) {
  (void)self;
  (void)event;
  (void)error;
  return TSM_OK;
}

static inline int test_plugin_close_nothing(void *self, int64_t timeout_ns, tsm_buffer *error) {
  (void)self;
  (void)timeout_ns;
  (void)error;
  return TSM_OK;
}

static const tsm_sink_vtable test_plugin_null_sink_vtable = {
    sizeof(tsm_sink_vtable), test_plugin_emit_nothing, test_plugin_close_nothing};

static const tsm_node_session_vtable test_plugin_null_session_vtable = {
    sizeof(tsm_node_session_vtable), test_plugin_close_nothing};

/* create_sink that hands out the do-nothing sink. */
static inline int test_plugin_create_null_sink(void *user_data, const char *config, size_t size,
                                               tsm_sink *sink, tsm_buffer *error) {
  (void)user_data;
  (void)config;
  (void)size;
  (void)error;
  sink->vtable = &test_plugin_null_sink_vtable;
  sink->self = NULL;
  return TSM_OK;
}

/* A descriptor for name with the given validate, the do-nothing sink, no
 * start_node, no override and no user data. */
static inline tsm_reporter_descriptor test_plugin_descriptor(const char *name,
                                                             test_plugin_validate_fn validate) {
  tsm_reporter_descriptor descriptor;
  memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = name;
  descriptor.validate = validate;
  descriptor.create_sink = test_plugin_create_null_sink;
  descriptor.start_node = NULL;
  return descriptor;
}

/* Nonzero when the host implements the API version this header describes. */
static inline int test_plugin_api_supported(const tsm_host_api *host) {
  return host->api_version == TSM_METRIC_REPORTER_API_VERSION;
}

/* Declares descriptor, or returns TSM_UNSUPPORTED_API for another API version. */
static inline int test_plugin_register_descriptor(const tsm_host_api *host,
                                                  const tsm_reporter_descriptor *descriptor,
                                                  tsm_buffer *error) {
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  return host->register_metric_reporter(host->host_data, descriptor, error);
}

/* Declares name with validate and the do-nothing sink (version-checked). */
static inline int test_plugin_register(const tsm_host_api *host, const char *name,
                                       test_plugin_validate_fn validate, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor(name, validate);
  return test_plugin_register_descriptor(host, &descriptor, error);
}

/* validate that ignores its input and answers the text its user_data points to. */
static inline int test_plugin_validate_user_data(void *user_data, const char *config, size_t size,
                                                 tsm_buffer *normalized, tsm_buffer *error) {
  (void)config;
  (void)size;
  (void)error;
  return test_plugin_answer(normalized, (const char *)user_data);
}

/* Declares name with a validate that always answers answer (version-checked). */
static inline int test_plugin_register_answering(const tsm_host_api *host, const char *name,
                                                 const char *answer, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor(name, test_plugin_validate_user_data);
  descriptor.user_data = (void *)answer;
  return test_plugin_register_descriptor(host, &descriptor, error);
}

#if defined(_GNU_SOURCE)
#include <dlfcn.h>

/* An object inside the shared object that includes this header. */
static const char test_plugin_address_in_this_file = 0;

/* The base name of the shared object that includes this header, or fallback. */
static inline const char *test_plugin_own_file_name(const char *fallback) {
  Dl_info info;
  const char *file = fallback;
  const char *slash;
  if (dladdr(&test_plugin_address_in_this_file, &info) != 0 && info.dli_fname != NULL)
    file = info.dli_fname;
  slash = strrchr(file, '/');
  return slash != NULL ? slash + 1 : file;
}

/* validate that ignores its input and answers {"file":"<own file name>"}, so
 * the plugin that owns a reporter name is visible. */
static inline int test_plugin_validate_own_file(void *user_data, const char *config, size_t size,
                                                tsm_buffer *normalized, tsm_buffer *error) {
  const char *file = test_plugin_own_file_name("unknown");
  char json[512];
  size_t length = strlen(file);
  (void)user_data;
  (void)config;
  (void)size;
  (void)error;
  if (length > sizeof json - 16) length = sizeof json - 16;
  memcpy(json, "{\"file\":\"", 9);
  memcpy(json + 9, file, length);
  memcpy(json + 9 + length, "\"}", 2);
  normalized->assign(normalized, json, 9 + length + 2);
  return TSM_OK;
}
#endif /* _GNU_SOURCE */

/* The validate of the loader unit-test plugins: rejects a "reject" key,
 * answers a JSON array for an "array" key, fills in defaults for {}, and
 * accepts anything else as given (buffer left empty). */
static inline int test_plugin_validate_unit(void *user_data, const char *config, size_t size,
                                            tsm_buffer *normalized, tsm_buffer *error) {
  (void)user_data;
  if (strstr(config, "\"reject\"") != NULL)
    return test_plugin_fail(error, "setting 'reject' is not supported");
  if (strstr(config, "\"array\"") != NULL) return test_plugin_answer(normalized, "[1,2]");
  if (size == 2 && memcmp(config, "{}", 2) == 0)
    return test_plugin_answer(normalized, "{\"queue_size\":100}");
  return TSM_OK;
}

/* Copies the string value of "key" in a flat JSON object (no escapes) into
 * out; "" when absent. Test plugins only: not a JSON parser. */
static inline void test_plugin_config_string(const char *config, const char *key, char *out,
                                             size_t size) {
  char pattern[80];
  const char *at;
  const char *end;
  size_t length;
  out[0] = '\0';
  if (strlen(key) + 4 > sizeof pattern) return;
  pattern[0] = '"';
  strcpy(pattern + 1, key);
  strcat(pattern, "\"");
  at = strstr(config, pattern);
  if (at == NULL) return;
  at = strchr(at + strlen(pattern), '"');
  if (at == NULL) return;
  end = strchr(++at, '"');
  if (end == NULL) return;
  length = (size_t)(end - at);
  if (length >= size) length = size - 1;
  memcpy(out, at, length);
  out[length] = '\0';
}

/* Nonzero when needle is "" or equals the event's metric or a label value. */
static inline int test_plugin_event_matches(const tsm_metric_event *event, const char *needle) {
  uint32_t i;
  if (needle[0] == '\0' || strcmp(event->metric, needle) == 0) return 1;
  for (i = 0; i < event->label_count; ++i) {
    if (strcmp(event->label_values[i], needle) == 0) return 1;
  }
  return 0;
}

/* A sink whose fault fires on the events that match the "on" setting: a
 * metric name or a label value ("" or absent: every event). The fault
 * plugins keep one per sink. */
typedef struct test_plugin_fault_sink {
  char on[128];
} test_plugin_fault_sink;

/* close of a sink whose state is one calloc'd block. */
static inline int test_plugin_close_free(void *self, int64_t timeout_ns, tsm_buffer *error) {
  (void)timeout_ns;
  (void)error;
  free(self);
  return TSM_OK;
}

/* create_sink of a fault output: a test_plugin_fault_sink holding the "on"
 * setting, driven by the sink vtable passed as user_data. */
static inline int test_plugin_create_fault_sink(void *user_data, const char *config, size_t size,
                                                tsm_sink *sink, tsm_buffer *error) {
  test_plugin_fault_sink *self = (test_plugin_fault_sink *)calloc(1, sizeof *self);
  (void)size;
  if (self == NULL) return test_plugin_fail(error, "out of memory");
  test_plugin_config_string(config, "on", self->on, sizeof self->on);
  sink->vtable = (const tsm_sink_vtable *)user_data;
  sink->self = self;
  return TSM_OK;
}

/* Registers output name whose sinks are fault sinks driven by vtable. */
static inline int test_plugin_register_fault_output(const tsm_host_api *host, const char *name,
                                                    const tsm_sink_vtable *vtable,
                                                    tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor(name, test_plugin_validate_echo);
  descriptor.create_sink = test_plugin_create_fault_sink;
  descriptor.user_data = (void *)vtable;
  return test_plugin_register_descriptor(host, &descriptor, error);
}

#endif /* TSM_TEST_PLUGIN_COMMON_H */
