/* aborts_in_emit.c — output 'aborts_in_emit': calls abort() in emit (the
 * fault) on the first event that matches its "on" setting (a metric name or
 * a label value; every event without it). */
#include <stdlib.h>

#include "test_plugin_common.h"

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  (void)error;
  if (test_plugin_event_matches(event, ((test_plugin_fault_sink *)self)->on)) abort();
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, test_plugin_close_free};

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register_fault_output(host, "aborts_in_emit", &sink_vtable, error);
}
