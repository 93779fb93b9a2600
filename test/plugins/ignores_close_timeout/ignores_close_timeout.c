/* ignores_close_timeout.c — output 'stuck_close': accepts every event, but its
 * sink close sleeps 60 s whatever timeout it is given (the fault). */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "test_plugin_common.h"

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
  struct timespec minute = {60, 0};
  (void)self;
  (void)timeout_ns;
  (void)error;
  while (nanosleep(&minute, &minute) != 0) {
  }
  return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), test_plugin_emit_nothing,
                                            close_sink};

/* The do-nothing sink, with the close above in its vtable. */
static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  test_plugin_create_null_sink(ud, config, size, sink, error);
  sink->vtable = &sink_vtable;
  return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor =
      test_plugin_descriptor("stuck_close", test_plugin_validate_echo);
  descriptor.create_sink = create_sink;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
