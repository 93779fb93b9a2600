/* unit_prefixed.c — built as libunit_prefixed.so to prove the "lib" prefix is
 * not part of the plugin name. Registers "unit_prefixed". */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor d = test_plugin_descriptor("unit_prefixed", test_plugin_validate_unit);
  return host->register_metric_reporter(host->host_data, &d, error);
}
