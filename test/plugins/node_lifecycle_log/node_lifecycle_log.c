/* node_lifecycle_log.c — output 'lifecycle_log' with start_node. Settings:
 * {"log": "<file>"}. Each of start_node, create_sink, sink close and session
 * close (and validate) appends one line "<call> <pid> <argument>" to the file with O_APPEND,
 * so lines of several processes never interleave. start_node hands producers
 * {"log": ..., "session": "<launcher pid>"}: plain data naming the session. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_plugin_common.h"

/* The string value of "log" in a flat JSON object without escapes; "" if none. */
static void log_path(const char *config, size_t size, char *out, size_t out_size) {
  const char *key = strstr(config, "\"log\"");
  out[0] = '\0';
  if (key == NULL || (size_t)(key - config) >= size) return;
  const char *open = strchr(strchr(key + 5, ':'), '"');
  if (open == NULL) return;
  const char *close = strchr(open + 1, '"');
  if (close == NULL || (size_t)(close - open - 1) >= out_size) return;
  memcpy(out, open + 1, (size_t)(close - open - 1));
  out[close - open - 1] = '\0';
}

static void append_line(const char *path, const char *call, const char *argument) {
  char line[4096];
  if (path[0] == '\0') return;
  const int n = snprintf(line, sizeof line, "%s %ld %s\n", call, (long)getpid(), argument);
  const int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) < 0) { /* best effort */
  }
  close(fd);
}

typedef struct lifecycle {
  char log[1024];
} lifecycle;

static int validate(void *ud, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  char path[1024];
  (void)ud;
  log_path(config, size, path, sizeof path);
  if (path[0] == '\0') {
    static const char message[] = "setting \"log\" (a file path) is required";
    error->assign(error, message, sizeof message - 1);
    return TSM_ERROR;
  }
  append_line(path, "validate", "-");
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
  lifecycle *sink = self;
  (void)timeout_ns;
  (void)error;
  append_line(sink->log, "sink_close", "-");
  free(sink);
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), test_plugin_emit_nothing,
                                            close_sink};

static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  lifecycle *state = calloc(1, sizeof *state);
  (void)ud;
  (void)error;
  if (state == NULL) return TSM_ERROR;
  log_path(config, size, state->log, sizeof state->log);
  append_line(state->log, "create_sink", config);
  sink->vtable = &sink_vtable;
  sink->self = state;
  return TSM_OK;
}

static int close_session(void *self, int64_t timeout_ns, tsm_buffer *error) {
  lifecycle *session = self;
  (void)timeout_ns;
  (void)error;
  append_line(session->log, "session_close", "-");
  free(session);
  return TSM_OK;
}

static const tsm_node_session_vtable session_vtable = {sizeof(tsm_node_session_vtable),
                                                       close_session};

static int start_node(void *ud, const char *config, size_t size, tsm_node_session *session,
                      tsm_buffer *producer_config, tsm_buffer *error) {
  char text[2048];
  lifecycle *state = calloc(1, sizeof *state);
  (void)ud;
  (void)error;
  if (state == NULL) return TSM_ERROR;
  log_path(config, size, state->log, sizeof state->log);
  append_line(state->log, "start_node", "-");
  const int n = snprintf(text, sizeof text, "{\"log\":\"%s\",\"session\":\"%ld\"}", state->log,
                         (long)getpid());
  producer_config->assign(producer_config, text, (size_t)n);
  session->vtable = &session_vtable;
  session->self = state;
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor("lifecycle_log", validate);
  descriptor.create_sink = create_sink;
  descriptor.start_node = start_node;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
