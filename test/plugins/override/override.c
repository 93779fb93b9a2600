/* override.c — models an output name taken over by a later plugin. Built as
 * override_base.so (declares 'overridden_output' without override) and
 * override_replacement.so (declares it with override). validate answers
 * {"file": "<this plugin's file name>"} so the owner of the name is visible. */
#define _GNU_SOURCE
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor replacement =
      test_plugin_descriptor(REPORTER_NAME, test_plugin_validate_own_file);
  replacement.override = REPORTER_OVERRIDE;
  return test_plugin_register_descriptor(host, &replacement, error);
}
