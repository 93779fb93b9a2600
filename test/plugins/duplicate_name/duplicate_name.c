/* duplicate_name.c — models two plugins that declare the same output name,
 * 'duplicated_output', without override. Built twice (duplicate_name_a.so,
 * duplicate_name_b.so). validate answers {"file": "<this plugin's file name>"}
 * so the owner of the name is visible. */
#define _GNU_SOURCE
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  return test_plugin_register(host, REPORTER_NAME, test_plugin_validate_own_file, error);
}
