/* registers_late.c — models a plugin that keeps the host's registration
 * function and calls it after tsm_register has returned (from validate),
 * trying to declare 'late_output'. Declares 'registers_late'; its validate
 * answers {"late_registration": "accepted"} or {"late_registration":
 * "rejected"} with what the host answered. */
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static int (*saved_register)(void *, const tsm_reporter_descriptor *, tsm_buffer *);
static void *saved_host_data;

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

static void discard(tsm_buffer *buffer, const char *data, size_t size) {
    (void)buffer;
    (void)data;
    (void)size;
}

static int validate(void *user_data, const char *config, size_t size,
                    tsm_buffer *normalized, tsm_buffer *error) {
    static const char accepted[] = "{\"late_registration\":\"accepted\"}";
    static const char rejected[] = "{\"late_registration\":\"rejected\"}";
    tsm_reporter_descriptor descriptor;
    tsm_buffer late_error;
    int status;
    (void)user_data;
    (void)config;
    (void)size;
    (void)error;
    late_error.struct_size = sizeof late_error;
    late_error.host_data = NULL;
    late_error.assign = discard;
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = "late_output";
    descriptor.validate = validate;
    descriptor.create_sink = create_sink;
    descriptor.start_node = NULL;
    status = saved_register(saved_host_data, &descriptor, &late_error);
    if (status == TSM_OK)
        normalized->assign(normalized, accepted, sizeof accepted - 1);
    else
        normalized->assign(normalized, rejected, sizeof rejected - 1);
    return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    saved_register = host->register_metric_reporter;
    saved_host_data = host->host_data;
    return register_one(host, "registers_late", validate, error);
}
