/* aborts_in_emit.c — output 'aborts_in_emit': calls abort() in emit (the
 * fault) on the first event that matches its "on" setting (a metric name or
 * a label value; every event without it). */
#include <stdlib.h>

#include "test_plugin_common.h"

static int emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
    (void)error;
    if (test_plugin_event_matches(event, ((test_plugin_fault_sink *)self)->on)) abort();
    return TSM_OK;
}

static int close_sink(void *self, int64_t timeout_ns, tsm_buffer *error) {
    (void)timeout_ns;
    (void)error;
    free(self);
    return TSM_OK;
}

static const tsm_sink_vtable sink_vtable = {sizeof(tsm_sink_vtable), emit, close_sink};

static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
    test_plugin_fault_sink *self = calloc(1, sizeof *self);
    (void)ud;
    (void)size;
    if (self == NULL) return test_plugin_fail(error, "out of memory");
    test_plugin_config_string(config, "on", self->on, sizeof self->on);
    sink->vtable = &sink_vtable;
    sink->self = self;
    return TSM_OK;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
    tsm_reporter_descriptor descriptor =
        test_plugin_descriptor("aborts_in_emit", test_plugin_validate_echo);
    descriptor.create_sink = create_sink;
    return test_plugin_register_descriptor(host, &descriptor, error);
}
