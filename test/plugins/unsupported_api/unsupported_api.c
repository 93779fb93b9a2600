/* unsupported_api.c — models a plugin built for a metric reporter API version
 * the host does not implement: it checks the version first and refuses. */
#include <tokenspeed/metric_reporter.h>

#define SUPPORTED_API_VERSION 2u

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    static const char message[] = "this plugin supports metric reporter API version 2 only";
    if (host->api_version != SUPPORTED_API_VERSION) {
        error->assign(error, message, sizeof message - 1);
        return TSM_UNSUPPORTED_API;
    }
    return TSM_OK;
}
