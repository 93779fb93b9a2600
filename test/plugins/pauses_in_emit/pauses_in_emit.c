/* pauses_in_emit.c — output 'pauses_in_emit': its emit blocks while the file
 * named by its "on" setting exists (the fault: an output stuck on its
 * destination for as long as a test wants), then it delivers normally again.
 * The file is looked at most once per millisecond while not paused. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "test_plugin_common.h"

static int64_t now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

static int paused(const char *path) {
  struct stat info;
  return path[0] != '\0' && stat(path, &info) == 0;
}

/* Touched only by the host's delivery thread of this output (one emit at a time). */
static int64_t last_look_ms;

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  const char *path = ((test_plugin_fault_sink *)self)->on;
  const struct timespec pause = {0, 10 * 1000 * 1000};
  int64_t now = now_ms();
  (void)event;
  (void)error;
  if (now == last_look_ms) return TSM_OK;
  last_look_ms = now;
  while (paused(path)) nanosleep(&pause, NULL);
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, test_plugin_close_free};

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register_fault_output(host, "pauses_in_emit", &sink_vtable, error);
}
