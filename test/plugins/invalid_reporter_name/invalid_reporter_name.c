/* invalid_reporter_name.c — models a plugin that declares an output name with
 * characters outside [a-z0-9_.-]. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register(host, "Invalid Name!", test_plugin_validate_echo, error);
}
