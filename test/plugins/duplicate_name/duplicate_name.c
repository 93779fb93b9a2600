/* duplicate_name.c — models two plugins that declare the same output name,
 * 'duplicated_output', without override. Built twice (duplicate_name_a.so,
 * duplicate_name_b.so). validate answers {"file": "<this plugin's file name>"}
 * so the owner of the name is visible. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

#include <tokenspeed/metric_reporter.h>

static const char address_in_this_file = 0;

static int validate(void *user_data, const char *config, size_t size,
                    tsm_buffer *normalized, tsm_buffer *error) {
    Dl_info info;
    const char *file = "unknown";
    const char *slash;
    char json[512];
    size_t length;
    (void)user_data;
    (void)config;
    (void)size;
    (void)error;
    if (dladdr(&address_in_this_file, &info) != 0 && info.dli_fname != NULL) file = info.dli_fname;
    slash = strrchr(file, '/');
    if (slash != NULL) file = slash + 1;
    length = strlen(file);
    if (length > sizeof json - 16) length = sizeof json - 16;
    memcpy(json, "{\"file\":\"", 9);
    memcpy(json + 9, file, length);
    memcpy(json + 9 + length, "\"}", 2);
    normalized->assign(normalized, json, 9 + length + 2);
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
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = REPORTER_NAME;
    descriptor.validate = validate;
    descriptor.create_sink = create_sink;
    descriptor.start_node = NULL;
    descriptor.override = REPORTER_OVERRIDE;
    return host->register_metric_reporter(host->host_data, &descriptor, error);
}
