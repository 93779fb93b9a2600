/* unit_fails_after_register.c — registers "unit_rollback" and then fails, so
 * the host must roll that name back. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor d = test_plugin_descriptor("unit_rollback", test_plugin_validate_unit);
  host->register_metric_reporter(host->host_data, &d, error);
  return test_plugin_fail(error, "deliberate failure after registering");
}
