/* reports_figures.c — output 'reports_figures': a sink that reads the process
 * it serves (tsm_sink.process) and reports delivery figures through
 * tsm_sink.report_figures when the host's struct_size covers them
 * (TSM_SINK_SIZE_V2): of the events it accepts, every third is refused and
 * the others sent; every fifth counts one retry; nothing is lost or pending.
 * Figures are reported after each event and once more in close.
 *
 * Settings: {"log": "<file>", "crash_at": N}. Lines "<call> <pid> <detail>"
 * (O_APPEND): create_sink with the identity it saw (or "identity=none"),
 * sink_close with the figures it reported last. With crash_at, the first
 * sink of each process (by name) that reaches its Nth event writes
 * "crash <pid> name=... events=<N - 1>" and raises SIGSEGV there (for an
 * output isolated in a sink helper: the helper dies and is restarted, its
 * figures kept). */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test_plugin_common.h"
#include "test_plugin_log.h"

typedef struct figures_sink {
  char log[1024];
  /* Copied from the host's tsm_sink when its struct_size covers them (minor 3). */
  void (*report_figures)(void *host_sink_data, const tsm_delivery_figures *figures);
  void *host_sink_data;
  char name[256];    /* the process it serves */
  uint64_t crash_at; /* 0: never */
  uint64_t events;
  tsm_delivery_figures figures;
} figures_sink;

static void report(figures_sink *sink) {
  if (sink->report_figures != NULL) sink->report_figures(sink->host_sink_data, &sink->figures);
}

/* Dies at the crash_at-th event unless a sink of this process did before
 * (a marker file beside the log says so). */
static void crash_once(const figures_sink *sink) {
  char marker[1400];
  char detail[512];
  int fd;
  snprintf(marker, sizeof marker, "%s.%s.crashed", sink->log, sink->name);
  fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return; /* crashed before (or cannot tell): carry on */
  close(fd);
  snprintf(detail, sizeof detail, "name=%s events=%llu", sink->name,
           (unsigned long long)(sink->events - 1));
  test_plugin_append_line(sink->log, "crash", detail);
  raise(SIGSEGV);
}

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  figures_sink *sink = self;
  (void)event;
  (void)error;
  ++sink->events;
  if (sink->events == sink->crash_at) crash_once(sink);
  if (sink->events % 3 == 0)
    ++sink->figures.refused;
  else
    ++sink->figures.sent;
  if (sink->events % 5 == 0) ++sink->figures.retries;
  report(sink);
  return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
  figures_sink *sink = self;
  char detail[512];
  (void)timeout_ns;
  (void)error;
  report(sink);
  snprintf(detail, sizeof detail, "name=%s events=%llu sent=%llu refused=%llu retries=%llu",
           sink->name, (unsigned long long)sink->events, (unsigned long long)sink->figures.sent,
           (unsigned long long)sink->figures.refused, (unsigned long long)sink->figures.retries);
  test_plugin_append_line(sink->log, "sink_close", detail);
  free(sink);
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, close_sink};

static int create_sink(void *user_data, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  figures_sink *state = calloc(1, sizeof *state);
  char detail[1024];
  const tsm_process_identity *process = NULL;
  (void)user_data;
  (void)size;
  if (state == NULL) return test_plugin_fail(error, "out of memory");
  test_plugin_config_string(config, "log", state->log, sizeof state->log);
  state->figures.struct_size = sizeof(tsm_delivery_figures);
  if (sink->struct_size >= TSM_SINK_SIZE_V2) {
    process = sink->process;
    state->report_figures = sink->report_figures;
    state->host_sink_data = sink->host_sink_data;
  }
  {
    const char *at = strstr(config, "\"crash_at\"");
    if (at != NULL && (at = strchr(at, ':')) != NULL) state->crash_at = strtoull(at + 1, NULL, 10);
  }
  if (process != NULL && process->struct_size >= sizeof(tsm_process_identity)) {
    snprintf(state->name, sizeof state->name, "%s", process->name);
    snprintf(detail, sizeof detail, "name=%s role=%s rank=%ld node=%s pid=%lld", process->name,
             process->role, (long)process->rank, process->node, (long long)process->pid);
  } else {
    snprintf(detail, sizeof detail, "identity=none");
  }
  test_plugin_append_line(state->log, "create_sink", detail);
  sink->vtable = &sink_vtable;
  sink->self = state;
  return TSM_OK;
}

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  char path[1024];
  (void)user_data;
  test_plugin_config_string(config, "log", path, sizeof path);
  if (path[0] == '\0') return test_plugin_fail(error, "setting \"log\" (a file path) is required");
  normalized->assign(normalized, config, size);
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor("reports_figures", validate);
  descriptor.create_sink = create_sink;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
