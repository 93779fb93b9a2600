/* fails_in_emit.c — output 'fails_in_emit': its emit returns an error (the
 * fault), so the host disables the sink on its first event. */
#include "test_plugin_common.h"

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
  (void)self;
  (void)event;
  return test_plugin_fail(error, "the destination rejected the event");
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit,
                                            test_plugin_close_nothing};

static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  test_plugin_create_null_sink(ud, config, size, sink, error);
  sink->vtable = &sink_vtable;
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor =
      test_plugin_descriptor("fails_in_emit", test_plugin_validate_echo);
  descriptor.create_sink = create_sink;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
