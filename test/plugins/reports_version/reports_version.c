/* reports_version.c — output 'reports_version', whose descriptor carries the
 * optional plugin version string "2.3.1". */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor =
      test_plugin_descriptor("reports_version", test_plugin_validate_echo);
  descriptor.version = "2.3.1";
  return test_plugin_register_descriptor(host, &descriptor, error);
}
