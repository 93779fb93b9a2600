/* descriptor_without_version.c — output 'descriptor_without_version', as a
 * plugin compiled against the header before `version` was appended: its
 * struct_size ends at user_data, and the bytes where `version` now lies are
 * not a string (the host must not read them). */
#include <stdint.h>

#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor =
      test_plugin_descriptor("descriptor_without_version", test_plugin_validate_echo);
  descriptor.struct_size = (uint32_t)TSM_REPORTER_DESCRIPTOR_SIZE_V1;
  descriptor.version = (const char *)(uintptr_t)0x1; /* beyond struct_size: never read */
  return test_plugin_register_descriptor(host, &descriptor, error);
}
