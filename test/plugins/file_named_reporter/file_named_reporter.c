/* file_named_reporter.c — models a plugin whose output name is whatever its
 * file is called: it declares the file name without ".so" (valid or not).
 * validate answers {"file": "<this plugin's file name>"}. */
#define _GNU_SOURCE
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  const char *file;
  char name[512];
  size_t length;
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  file = test_plugin_own_file_name("");
  length = strlen(file);
  if (length >= 3 && strcmp(file + length - 3, ".so") == 0) length -= 3;
  if (length >= sizeof name) length = sizeof name - 1;
  memcpy(name, file, length);
  name[length] = '\0';
  return test_plugin_register(host, name, test_plugin_validate_own_file, error);
}
