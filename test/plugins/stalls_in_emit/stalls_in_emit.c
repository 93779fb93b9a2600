/* stalls_in_emit.c — output 'stalled': each sink delivers its first 100 events,
 * then its next emit blocks for 30 s (the fault: a plugin waiting inside emit,
 * as one stuck on network I/O would), then it delivers normally again. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "test_plugin_common.h"

enum { EVENTS_BEFORE_STALL = 100 };
static const time_t STALL_SECONDS = 30;

/* One process-local sink. Touched only by the host's delivery thread of this output
 * (one emit at a time, close after the last emit). */
typedef struct stalled_sink {
  uint64_t emitted;
} stalled_sink;

static void sleep_fully(time_t seconds) {
  struct timespec left = {seconds, 0};
  while (nanosleep(&left, &left) != 0) {
  }
}

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  stalled_sink *sink = self;
  (void)event;
  (void)error;
  if (sink->emitted++ == EVENTS_BEFORE_STALL) sleep_fully(STALL_SECONDS);
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, test_plugin_close_free};

static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  stalled_sink *state = calloc(1, sizeof *state);
  (void)ud;
  (void)config;
  (void)size;
  if (state == NULL) return test_plugin_fail(error, "out of memory");
  sink->vtable = &sink_vtable;
  sink->self = state;
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor("stalled", test_plugin_validate_echo);
  descriptor.create_sink = create_sink;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
