/* fails_after_registering.c — models a plugin whose registration fails part
 * way: it declares the output 'rolled_back_output', then reports an error.
 * Built with -DREGISTRATION_SUCCEEDS it declares the same name and succeeds. */
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static int validate(void *user_data, const char *config, size_t size,
                    tsm_buffer *normalized, tsm_buffer *error) {
    (void)user_data;
    (void)error;
    normalized->assign(normalized, config, size);
    return TSM_OK;
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

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    static const char message[] = "the output's runtime library is missing";
    tsm_reporter_descriptor descriptor;
    int status;
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = "rolled_back_output";
    descriptor.validate = validate;
    descriptor.create_sink = create_sink;
    descriptor.start_node = NULL;
    status = host->register_metric_reporter(host->host_data, &descriptor, error);
    if (status != TSM_OK) return status;
#ifdef REGISTRATION_SUCCEEDS
    (void)message;
    return TSM_OK;
#endif
    error->assign(error, message, sizeof message - 1);
    return TSM_ERROR;
}
