/* registers_prometheus.c — models a plugin that declares the reserved output
 * name 'prometheus'. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register(host, "prometheus", test_plugin_validate_echo, error);
}
