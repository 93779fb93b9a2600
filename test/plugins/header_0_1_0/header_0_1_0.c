/* header_0_1_0.c — a plugin as a vendor built it against the header of the
 * first release, 0.1.0 (test/abi/0.1.0/tokenspeed/metric_reporter.h, verbatim),
 * using every capability that header had: the API version check, the host
 * version, host->log (during registration and later from the sink's thread),
 * two names, user_data, validate (normalizing and rejecting), start_node with
 * a node session and a producer configuration, create_sink, emit reading every
 * event field and the metric metadata, sink close with its timeout, and
 * session close.
 *
 * Outputs 'header_0_1_0' (with start_node) and 'header_0_1_0_direct' (without).
 * Settings: {"log": "<file>"}; any other key is refused. Each call appends one
 * line "<call> <pid> <detail>" to the file (O_APPEND). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tokenspeed/metric_reporter.h>

#ifdef TSM_REPORTER_DESCRIPTOR_SIZE_V1
#error "built against a header newer than 0.1.0: include test/abi/0.1.0, not abi/"
#endif

static void (*host_log)(void *host_data, uint32_t level, const char *message);
static void *host_log_data;

static const char reporter_tag[] = "header_0_1_0 user data";

/* The string value of "log" in a flat JSON object without escapes; "" if none. */
static void log_path(const char *config, size_t size, char *out, size_t out_size) {
  const char *key = strstr(config, "\"log\"");
  const char *colon;
  const char *open;
  const char *close;
  out[0] = '\0';
  if (key == NULL || (size_t)(key - config) >= size) return;
  colon = strchr(key + 5, ':');
  open = colon == NULL ? NULL : strchr(colon, '"');
  close = open == NULL ? NULL : strchr(open + 1, '"');
  if (close == NULL || (size_t)(close - open - 1) >= out_size) return;
  memcpy(out, open + 1, (size_t)(close - open - 1));
  out[close - open - 1] = '\0';
}

static void append_line(const char *path, const char *call, const char *detail) {
  char line[4096];
  int n;
  int fd;
  if (path[0] == '\0') return;
  n = snprintf(line, sizeof line, "%s %ld %s\n", call, (long)getpid(), detail);
  if (n < 0 || (size_t)n >= sizeof line) return;
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return;
  if (write(fd, line, (size_t)n) < 0) { /* best effort */
  }
  close(fd);
}

static int fail(tsm_buffer *error, const char *message) {
  error->assign(error, message, strlen(message));
  return TSM_ERROR;
}

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  char path[1024];
  char text[1200];
  int n;
  if (user_data != (void *)reporter_tag) return fail(error, "user_data was not passed back");
  if (strstr(config, "\"reject\"") != NULL)
    return fail(error, "the 0.1.0 plugin refuses the setting \"reject\"");
  log_path(config, size, path, sizeof path);
  if (path[0] == '\0') return fail(error, "setting \"log\" (a file path) is required");
  append_line(path, "validate", "-");
  n = snprintf(text, sizeof text, "{\"log\":\"%s\",\"normalized_by\":\"0.1.0\"}", path);
  normalized->assign(normalized, text, (size_t)n);
  return TSM_OK;
}

typedef struct sink_state {
  char log[1024];
  unsigned long events;
  unsigned long by_operation[4];
  unsigned long long weight;
  unsigned long invalid;
  char first_invalid[256];
} sink_state;

/* Every field of a 0.1.0 event and of its metadata, read and cross-checked. */
static const char *event_problem(const tsm_metric_event *e) {
  const tsm_metric_info *info = e->info;
  uint32_t i;
  if (e->struct_size < sizeof(tsm_metric_event)) return "event struct_size too small";
  if (e->operation < TSM_OP_INC || e->operation > TSM_OP_OBSERVE) return "unknown operation";
  if (e->timestamp_ns <= 0) return "no timestamp";
  if (e->metric == NULL || info == NULL) return "no metric or no info";
  if (info->struct_size < sizeof(tsm_metric_info)) return "info struct_size too small";
  if (info->name == NULL || strcmp(info->name, e->metric) != 0) return "info name differs";
  if (info->help == NULL || info->unit == NULL) return "no help or unit";
  if (e->operation != info->kind) return "operation does not match the kind";
  if (e->weight == 0 || (e->operation != TSM_OP_OBSERVE && e->weight != 1)) return "weight";
  if (e->label_count != info->label_count) return "label count differs";
  for (i = 0; i < e->label_count; ++i) {
    if (e->label_names[i] == NULL || e->label_values[i] == NULL) return "null label";
    if (strcmp(e->label_names[i], info->label_names[i]) != 0) return "label order differs";
  }
  for (i = 1; i < info->bucket_count; ++i) {
    if (!(info->bucket_bounds[i - 1] < info->bucket_bounds[i])) return "buckets not ascending";
  }
  return NULL;
}

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  sink_state *sink = self;
  const char *problem = event_problem(event);
  (void)error;
  ++sink->events;
  sink->weight += event->weight;
  if (event->operation <= TSM_OP_OBSERVE) ++sink->by_operation[event->operation];
  if (problem != NULL && sink->invalid++ == 0) {
    snprintf(sink->first_invalid, sizeof sink->first_invalid, "%s: %s", problem,
             event->metric != NULL ? event->metric : "?");
  }
  return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
  sink_state *sink = self;
  char detail[512];
  (void)error;
  snprintf(detail, sizeof detail,
           "events=%lu inc=%lu set=%lu observe=%lu weight=%llu "
           "invalid=%lu timeout=%s %s",
           sink->events, sink->by_operation[TSM_OP_INC], sink->by_operation[TSM_OP_SET],
           sink->by_operation[TSM_OP_OBSERVE], sink->weight, sink->invalid,
           timeout_ns > 0 ? "positive" : "none", sink->first_invalid);
  append_line(sink->log, "sink_close", detail);
  if (host_log != NULL) {
    char message[600];
    snprintf(message, sizeof message, "0.1.0 sink closed: %s", detail);
    host_log(host_log_data, TSM_LOG_INFO, message);
  }
  free(sink);
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, close_sink};

static int create_sink(void *user_data, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  sink_state *state;
  if (user_data != (void *)reporter_tag) return fail(error, "user_data was not passed back");
  if (sink->struct_size < sizeof(tsm_sink)) return fail(error, "sink struct_size too small");
  state = calloc(1, sizeof *state);
  if (state == NULL) return fail(error, "out of memory");
  log_path(config, size, state->log, sizeof state->log);
  append_line(state->log, "create_sink", config);
  sink->vtable = &sink_vtable;
  sink->self = state;
  return TSM_OK;
}

typedef struct session_state {
  char log[1024];
} session_state;

static int close_session(void *self, int64_t timeout_ns, tsm_buffer *error) {
  session_state *session = self;
  (void)error;
  append_line(session->log, "session_close", timeout_ns > 0 ? "timeout=positive" : "timeout=none");
  free(session);
  return TSM_OK;
}

static const tsm_node_session_vtable session_vtable = {sizeof(tsm_node_session_vtable),
                                                       close_session};

static int start_node(void *user_data, const char *config, size_t size, tsm_node_session *session,
                      tsm_buffer *producer_config, tsm_buffer *error) {
  char text[1200];
  int n;
  session_state *state;
  if (user_data != (void *)reporter_tag) return fail(error, "user_data was not passed back");
  state = calloc(1, sizeof *state);
  if (state == NULL) return fail(error, "out of memory");
  log_path(config, size, state->log, sizeof state->log);
  append_line(state->log, "start_node", config);
  n = snprintf(text, sizeof text, "{\"log\":\"%s\",\"session\":\"%ld\"}", state->log,
               (long)getpid());
  producer_config->assign(producer_config, text, (size_t)n);
  session->vtable = &session_vtable;
  session->self = state;
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor;
  char note[256];
  int status;
  if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) {
    fail(error, "built against the 0.1.0 header: metric reporter API version 1 only");
    return TSM_UNSUPPORTED_API;
  }
  if (host->struct_size < sizeof(tsm_host_api)) return fail(error, "host table too small");
  host_log = host->log;
  host_log_data = host->host_data;
  snprintf(note, sizeof note, "0.1.0 plugin registering in host %s",
           host->host_version != NULL ? host->host_version : "?");
  host->log(host->host_data, TSM_LOG_DEBUG, note);

  memset(&descriptor, 0, sizeof descriptor);
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = "header_0_1_0";
  descriptor.validate = validate;
  descriptor.create_sink = create_sink;
  descriptor.start_node = start_node;
  descriptor.override = 0;
  descriptor.user_data = (void *)reporter_tag;
  status = host->register_metric_reporter(host->host_data, &descriptor, error);
  if (status != TSM_OK) return status;

  descriptor.name = "header_0_1_0_direct";
  descriptor.start_node = NULL;
  return host->register_metric_reporter(host->host_data, &descriptor, error);
}
