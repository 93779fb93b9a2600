/* missing_register_symbol.c — models a shared object that is not a metric
 * plugin: it exports a function, but not tsm_register. */
#include <tokenspeed/metric_reporter.h>

TSM_EXPORT int tsm_register_reporters(const tsm_host_api *host, tsm_buffer *error) {
  (void)host;
  (void)error;
  return TSM_OK;
}
