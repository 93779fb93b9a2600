/* exports_symbol.c — models a plugin that exports, besides tsm_register, a
 * global function named like one another plugin needs
 * (tsm_vendor_runtime_init, which fails_to_load.so references). A plugin must
 * not be able to satisfy another plugin's symbols: each loads in isolation.
 * It declares no output. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_vendor_runtime_init(void);

TSM_EXPORT int tsm_vendor_runtime_init(void) { return TSM_OK; }

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  (void)error;
  return test_plugin_api_supported(host) ? TSM_OK : TSM_UNSUPPORTED_API;
}
