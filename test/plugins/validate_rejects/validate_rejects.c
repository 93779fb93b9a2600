/* validate_rejects.c — models an output whose validate refuses its settings,
 * with a message of its own. Declares 'validate_rejects'. */
#include "test_plugin_common.h"

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  (void)user_data;
  (void)config;
  (void)size;
  (void)normalized;
  return test_plugin_fail(error, "endpoint is required and must start with https://");
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register(host, "validate_rejects", validate, error);
}
