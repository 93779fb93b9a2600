/* noop_sink.c — output 'noop_sink': an emit that does nothing, so that a
 * benchmark measures the host's cost of delivering an event (in process or
 * through an isolated output's helper) and nothing else. */
#include <stdlib.h>

#include "test_plugin_common.h"

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  (void)self;
  (void)event;
  (void)error;
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, test_plugin_close_free};

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register_fault_output(host, "noop_sink", &sink_vtable, error);
}
