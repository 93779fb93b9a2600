/* fails_to_load.c — models a plugin file that cannot be loaded: it references
 * a function that no library defines, so resolving it at load time fails. */
#include <tokenspeed/metric_reporter.h>

extern int tsm_function_defined_nowhere(void);

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    (void)host;
    (void)error;
    return tsm_function_defined_nowhere();
}
