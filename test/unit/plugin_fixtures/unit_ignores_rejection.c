/* unit_ignores_rejection.c — registers "unit_kept", then the reserved name
 * "prometheus", and returns TSM_OK although the second call was rejected. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor kept = test_plugin_descriptor("unit_kept", test_plugin_validate_unit);
  tsm_reporter_descriptor reserved =
      test_plugin_descriptor("prometheus", test_plugin_validate_unit);
  host->register_metric_reporter(host->host_data, &kept, error);
  host->register_metric_reporter(host->host_data, &reserved, error);
  return TSM_OK;
}
