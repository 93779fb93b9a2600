/* validate_rejects.c — models an output whose validate refuses its settings,
 * with a message of its own. Declares 'validate_rejects'. */
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static int validate(void *user_data, const char *config, size_t size,
                    tsm_buffer *normalized, tsm_buffer *error) {
    static const char message[] = "endpoint is required and must start with https://";
    (void)user_data;
    (void)config;
    (void)size;
    (void)normalized;
    error->assign(error, message, sizeof message - 1);
    return TSM_ERROR;
}

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
    (void)self;
    (void)event;
    (void)error;
    return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
    (void)self;
    (void)timeout_ns;
    (void)error;
    return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, close_sink};

static int create_sink(void *user_data, const char *config, size_t size,
                       tsm_sink *sink, tsm_buffer *error) {
    (void)user_data;
    (void)config;
    (void)size;
    (void)error;
    sink->vtable = &sink_vtable;
    sink->self = NULL;
    return TSM_OK;
}

static int register_one(const tsm_host_api *host, const char *name,
                        int (*validate_fn)(void *, const char *, size_t, tsm_buffer *, tsm_buffer *),
                        tsm_buffer *error) {
    tsm_reporter_descriptor descriptor;
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = name;
    descriptor.validate = validate_fn;
    descriptor.create_sink = create_sink;
    descriptor.start_node = NULL;
    return host->register_metric_reporter(host->host_data, &descriptor, error);
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    return register_one(host, "validate_rejects", validate, error);
}
