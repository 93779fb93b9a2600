/* unit_duplicate.c — registers "unit.alpha" without override and returns the
 * host's answer (rejected when another plugin has the name). */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor d = test_plugin_descriptor("unit.alpha", test_plugin_validate_unit);
  return host->register_metric_reporter(host->host_data, &d, error);
}
