/* unit_prefixed.c — built as libunit_prefixed.so to prove the "lib" prefix is
 * not part of the plugin name. Registers "unit_prefixed". */
#include "unit_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    tsm_reporter_descriptor d = unit_descriptor("unit_prefixed", 0);
    return host->register_metric_reporter(host->host_data, &d, error);
}
