/* unit_wrong_api.c — supports only a future API version (99) and says so
 * after registering "unit_wrong_api", which the host must roll back. */
#include "unit_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    static const char message[] = "needs metric reporter API 99";
    tsm_reporter_descriptor d = unit_descriptor("unit_wrong_api", 0);
    host->register_metric_reporter(host->host_data, &d, error);
    if (host->api_version != 99u) {
        error->assign(error, message, sizeof message - 1);
        return TSM_UNSUPPORTED_API;
    }
    return TSM_OK;
}
