/* start_node_faults.c — outputs 'start_node_fails' (start_node returns an
 * error) and 'start_node_bad_config' (start_node returns a session and a
 * producer configuration that is a JSON array, not an object). */
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static int validate(void *ud, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
    (void)ud; (void)error;
    normalized->assign(normalized, config, size);
    return TSM_OK;
}

static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
    static const char message[] = "this output never creates sinks";
    (void)ud; (void)config; (void)size; (void)sink;
    error->assign(error, message, sizeof message - 1);
    return TSM_ERROR;
}

static int fail_start_node(void *ud, const char *config, size_t size, tsm_node_session *session,
                           tsm_buffer *producer_config, tsm_buffer *error) {
    static const char message[] = "cannot reach the node collector at 127.0.0.1:1";
    (void)ud; (void)config; (void)size; (void)session; (void)producer_config;
    error->assign(error, message, sizeof message - 1);
    return TSM_ERROR;
}

static int close_session(void *self, int64_t timeout_ns, tsm_buffer *error) {
    (void)self; (void)timeout_ns; (void)error;
    return TSM_OK;
}

static const tsm_node_session_vtable session_vtable = {sizeof(tsm_node_session_vtable),
                                                       close_session};

static int bad_config_start_node(void *ud, const char *config, size_t size,
                                 tsm_node_session *session, tsm_buffer *producer_config,
                                 tsm_buffer *error) {
    static const char array[] = "[\"socket\", 7]";
    (void)ud; (void)config; (void)size; (void)error;
    session->vtable = &session_vtable;
    session->self = NULL;
    producer_config->assign(producer_config, array, sizeof array - 1);
    return TSM_OK;
}

static int add(const tsm_host_api *host, const char *name,
               int (*start_node)(void *, const char *, size_t, tsm_node_session *, tsm_buffer *,
                                 tsm_buffer *),
               tsm_buffer *error) {
    tsm_reporter_descriptor descriptor;
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = name;
    descriptor.validate = validate;
    descriptor.create_sink = create_sink;
    descriptor.start_node = start_node;
    return host->register_metric_reporter(host->host_data, &descriptor, error);
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    if (add(host, "start_node_fails", fail_start_node, error) != TSM_OK) return TSM_ERROR;
    return add(host, "start_node_bad_config", bad_config_start_node, error);
}
