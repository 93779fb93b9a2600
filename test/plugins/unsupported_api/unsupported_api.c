/* unsupported_api.c — models a plugin built for a metric reporter API version
 * the host does not implement: it checks the version first and refuses. */
#include "test_plugin_common.h"

#define SUPPORTED_API_VERSION 2u

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  if (host->api_version != SUPPORTED_API_VERSION) {
    test_plugin_fail(error, "this plugin supports metric reporter API version 2 only");
    return TSM_UNSUPPORTED_API;
  }
  return TSM_OK;
}
