/* future_header.c — output 'future_header', as a plugin built against a later
 * minor of API version 1 than this host's (TSM_METRIC_REPORTER_API_MINOR + 1
 * or later): today's structs with fields appended after them, as a future
 * header appends them, so its descriptor and its sink vtable carry a larger
 * struct_size, and their unknown fields hold values that would crash a host
 * that followed them. It reads the host's
 * structs as a newer plugin must: a field past the host's struct_size is not
 * there, and the plugin falls back.
 *
 * Settings: {"log": "<file>"}. Lines "<call> <pid> <detail>" (O_APPEND). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_plugin_common.h"
#include "test_plugin_log.h"

/* Never to be followed by this host: not a valid address. */
#define FUTURE_POISON ((void *)(uintptr_t)0x10)

/* The descriptor of the future header: today's fields, then appended ones. */
typedef struct future_reporter_descriptor {
  tsm_reporter_descriptor today;
  const char *future_text;        /* unknown to this host */
  uint64_t future_flags;          /* unknown to this host */
  int (*future_callback)(void *); /* unknown to this host */
} future_reporter_descriptor;

typedef struct future_sink_vtable {
  tsm_sink_vtable today;
  int (*future_report)(void *self, void *figures); /* unknown to this host */
} future_sink_vtable;

/* A field the future header appends to tsm_host_api and tsm_metric_event:
 * where it would lie, and how much struct_size must cover to hold it. */
#define FUTURE_HOST_FIELD_END (sizeof(tsm_host_api) + sizeof(void *))
#define FUTURE_EVENT_FIELD_END (sizeof(tsm_metric_event) + sizeof(void *))

static char host_has_future_field[8] = "no";

static void log_path(const char *config, size_t size, char *out, size_t out_size) {
  const char *key = strstr(config, "\"log\"");
  const char *open;
  const char *close;
  out[0] = '\0';
  if (key == NULL || (size_t)(key - config) >= size) return;
  open = strchr(strchr(key + 5, ':'), '"');
  close = open == NULL ? NULL : strchr(open + 1, '"');
  if (close == NULL || (size_t)(close - open - 1) >= out_size) return;
  memcpy(out, open + 1, (size_t)(close - open - 1));
  out[close - open - 1] = '\0';
}

typedef struct future_sink {
  char log[1024];
  unsigned long events;
  unsigned long events_with_future_field;
} future_sink;

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  future_sink *sink = self;
  (void)error;
  ++sink->events;
  if (event->struct_size >= FUTURE_EVENT_FIELD_END) ++sink->events_with_future_field;
  return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
  future_sink *sink = self;
  char detail[256];
  (void)timeout_ns;
  (void)error;
  snprintf(detail, sizeof detail, "events=%lu events_with_future_field=%lu host_future_field=%s",
           sink->events, sink->events_with_future_field, host_has_future_field);
  test_plugin_append_line(sink->log, "sink_close", detail);
  free(sink);
  return TSM_OK;
}

static int future_report(void *self, void *figures) {
  (void)self;
  (void)figures;
  return TSM_OK;
}

static const future_sink_vtable sink_vtable = {{sizeof(future_sink_vtable), emit, close_sink},
                                               future_report};

static int create_sink(void *user_data, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  future_sink *state = calloc(1, sizeof *state);
  (void)user_data;
  if (state == NULL) return test_plugin_fail(error, "out of memory");
  log_path(config, size, state->log, sizeof state->log);
  test_plugin_append_line(state->log, "create_sink", "-");
  sink->vtable = &sink_vtable.today;
  sink->self = state;
  return TSM_OK;
}

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  char path[1024];
  (void)user_data;
  log_path(config, size, path, sizeof path);
  if (path[0] == '\0') return test_plugin_fail(error, "setting \"log\" (a file path) is required");
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  future_reporter_descriptor descriptor;
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  /* A newer plugin in an older host: the field is read only when covered. */
  if (host->struct_size >= FUTURE_HOST_FIELD_END) strcpy(host_has_future_field, "yes");
  memset(&descriptor, 0, sizeof descriptor);
  descriptor.today = test_plugin_descriptor("future_header", validate);
  descriptor.today.struct_size = sizeof descriptor;
  descriptor.today.create_sink = create_sink;
  descriptor.today.version =
      "1."
      "99"
      "-future";
  descriptor.today.settings =
      "[{\"key\": \"log\", \"type\": \"string\", \"description\": \"where calls are written\"}]";
  descriptor.future_text = FUTURE_POISON;
  descriptor.future_flags = UINT64_MAX;
  descriptor.future_callback = (int (*)(void *))(uintptr_t)0x10;
  return host->register_metric_reporter(host->host_data, &descriptor.today, error);
}
