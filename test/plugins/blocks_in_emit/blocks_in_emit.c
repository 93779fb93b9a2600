/* blocks_in_emit.c — output 'blocks_in_emit': its emit never returns (the
 * fault: it sleeps for an hour) once an event matches its "on" setting (a
 * metric name or a label value; every event without it). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <time.h>

#include "test_plugin_common.h"

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  struct timespec hour = {3600, 0};
  (void)error;
  if (!test_plugin_event_matches(event, ((test_plugin_fault_sink *)self)->on)) return TSM_OK;
  while (nanosleep(&hour, &hour) != 0) {
  }
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, test_plugin_close_free};

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register_fault_output(host, "blocks_in_emit", &sink_vtable, error);
}
