/* fails_to_load.c — models a plugin file that cannot be loaded: it calls a
 * function of a vendor runtime library that is not installed, so resolving it
 * at load time fails. */
#include <tokenspeed/metric_reporter.h>

extern int tsm_vendor_runtime_init(void);

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  (void)host;
  (void)error;
  return tsm_vendor_runtime_init();
}
