/* describes_settings.c — outputs that describe their settings through the
 * descriptor's appended settings field, in plain C:
 * 'described_output' (a valid description, built in a stack buffer that is
 * overwritten after registration: the host must have copied it),
 * 'badly_described_output' (text that is not a JSON array of objects), and
 * 'pre_settings_output' (a descriptor whose struct_size ends before the field,
 * as a plugin built before it existed; the bytes beyond hold garbage the host
 * must not read). */
#include <stddef.h>
#include <stdio.h>

#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  char settings[512];
  tsm_reporter_descriptor described =
      test_plugin_descriptor("described_output", test_plugin_validate_echo);
  snprintf(settings, sizeof settings, "%s",
           "[{\"key\":\"endpoint\",\"type\":\"string\",\"default\":\"udp://127.0.0.1:8125\","
           "\"description\":\"Where to send.\"},"
           "{\"key\":\"interval_ms\",\"type\":\"integer\",\"default\":1000,\"min\":1,"
           "\"max\":60000,\"description\":\"How often.\"},"
           "{\"key\":\"mode\",\"type\":\"choice\",\"default\":\"fast\","
           "\"choices\":[\"fast\",\"safe\"],\"description\":\"Which way.\"},"
           "{\"key\":\"token\",\"type\":\"string\",\"description\":\"Required.\"}]");
  described.settings = settings;
  int status = test_plugin_register_descriptor(host, &described, error);
  memset(settings, 'x', sizeof settings - 1); /* the host copied it, or shows garbage */
  settings[sizeof settings - 1] = '\0';
  if (status != TSM_OK) return status;

  tsm_reporter_descriptor bad =
      test_plugin_descriptor("badly_described_output", test_plugin_validate_echo);
  bad.settings = "{\"key\": \"not an array\"}";
  status = test_plugin_register_descriptor(host, &bad, error);
  if (status != TSM_OK) return status;

  tsm_reporter_descriptor old =
      test_plugin_descriptor("pre_settings_output", test_plugin_validate_echo);
  old.struct_size = (uint32_t)offsetof(tsm_reporter_descriptor, settings);
  old.settings = (const char *)(uintptr_t)1; /* garbage: must never be read */
  return test_plugin_register_descriptor(host, &old, error);
}
