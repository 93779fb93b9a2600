/* unit_two_names.c — registers two reporters, "unit.alpha" and "unit-beta"
 * (the second with start_node). Loader unit tests only. */
#include "unit_plugin_common.h"

static int session_close(void *self, int64_t timeout_ns, tsm_buffer *error) {
    (void)self; (void)timeout_ns; (void)error;
    return TSM_OK;
}
static const tsm_node_session_vtable session_vtable = {sizeof(tsm_node_session_vtable),
                                                       session_close};

static int start_node(void *ud, const char *cfg, size_t n, tsm_node_session *session,
                      tsm_buffer *producer_config, tsm_buffer *error) {
    static const char producer[] = "{\"endpoint\":\"node-local\"}";
    (void)ud; (void)cfg; (void)n; (void)error;
    session->vtable = &session_vtable;
    session->self = NULL;
    producer_config->assign(producer_config, producer, sizeof producer - 1);
    return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    tsm_reporter_descriptor alpha = unit_descriptor("unit.alpha", 0);
    tsm_reporter_descriptor beta = unit_descriptor("unit-beta", 0);
    int status;
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    beta.start_node = start_node;
    status = host->register_metric_reporter(host->host_data, &alpha, error);
    if (status != TSM_OK) return status;
    return host->register_metric_reporter(host->host_data, &beta, error);
}
