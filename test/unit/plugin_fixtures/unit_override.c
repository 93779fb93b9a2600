/* unit_override.c — registers "unit.alpha" with override set: it replaces
 * the earlier registration of that name. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor d = test_plugin_descriptor("unit.alpha", test_plugin_validate_unit);
  d.override = 1;
  return host->register_metric_reporter(host->host_data, &d, error);
}
