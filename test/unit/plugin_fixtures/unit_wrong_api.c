/* unit_wrong_api.c — supports only a future API version (99) and says so
 * after registering "unit_wrong_api", which the host must roll back. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor d = test_plugin_descriptor("unit_wrong_api", test_plugin_validate_unit);
  host->register_metric_reporter(host->host_data, &d, error);
  if (host->api_version != 99u) {
    test_plugin_fail(error, "needs metric reporter API 99");
    return TSM_UNSUPPORTED_API;
  }
  return TSM_OK;
}
