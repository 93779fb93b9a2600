/* segfaults_in_emit.c — output 'segfaults_in_emit': writes through a null pointer in emit (the
 * fault) on the first event that matches its "on" setting (a metric name or
 * a label value; every event without it). */
#include <stdlib.h>

#include "test_plugin_common.h"

/* A real invalid write, hidden from UBSan's null check (which would end the
 * process with its own report instead of the SIGSEGV this plugin stands for). */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((no_sanitize_undefined, noinline))
#endif
static void
write_through_null(void) {
  volatile int *volatile nowhere = NULL;
  *nowhere = 1;
}

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  (void)error;
  if (test_plugin_event_matches(event, ((test_plugin_fault_sink *)self)->on)) {
    write_through_null();
  }
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, test_plugin_close_free};

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register_fault_output(host, "segfaults_in_emit", &sink_vtable, error);
}
