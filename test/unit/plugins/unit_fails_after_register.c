/* unit_fails_after_register.c — registers "unit_rollback" and then fails, so
 * the host must roll that name back. */
#include "unit_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    static const char message[] = "deliberate failure after registering";
    tsm_reporter_descriptor d = unit_descriptor("unit_rollback", 0);
    host->register_metric_reporter(host->host_data, &d, error);
    error->assign(error, message, sizeof message - 1);
    return TSM_ERROR;
}
