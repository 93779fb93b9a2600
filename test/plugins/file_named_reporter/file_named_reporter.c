/* file_named_reporter.c — models a plugin whose output name is whatever its
 * file is called: it declares the file name without ".so" (valid or not).
 * validate answers {"file": "<this plugin's file name>"}. */
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
    Dl_info info;
    const char *file = "";
    const char *slash;
    char name[512];
    size_t length;
    if (host->api_version != TSM_METRIC_REPORTER_API_VERSION) return TSM_UNSUPPORTED_API;
    if (dladdr(&address_in_this_file, &info) != 0 && info.dli_fname != NULL) file = info.dli_fname;
    slash = strrchr(file, '/');
    if (slash != NULL) file = slash + 1;
    length = strlen(file);
    if (length >= 3 && strcmp(file + length - 3, ".so") == 0) length -= 3;
    if (length >= sizeof name) length = sizeof name - 1;
    memcpy(name, file, length);
    name[length] = '\0';
    memset(&descriptor, 0, sizeof descriptor);
    descriptor.struct_size = sizeof descriptor;
    descriptor.name = name;
    descriptor.validate = validate;
    descriptor.create_sink = create_sink;
    descriptor.start_node = NULL;
    return host->register_metric_reporter(host->host_data, &descriptor, error);
}
