/* counts_register_calls.c — a well-behaved output, 'counts_register_calls',
 * that counts how often tsm_register ran in this process. Its validate
 * answers {"register_calls": N}. */
#include <stdio.h>
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static unsigned register_calls;

static int validate(void *user_data, const char *config, size_t size,
                    tsm_buffer *normalized, tsm_buffer *error) {
    char json[64];
    int length;
    (void)user_data;
    (void)config;
    (void)size;
    (void)error;
    length = snprintf(json, sizeof json, "{\"register_calls\":%u}", register_calls);
    normalized->assign(normalized, json, (size_t)length);
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
    tsm_reporter_descriptor descriptor;
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    ++register_calls;
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = "counts_register_calls";
    descriptor.validate = validate;
    descriptor.create_sink = create_sink;
    descriptor.start_node = NULL;
    return host->register_metric_reporter(host->host_data, &descriptor, error);
}
