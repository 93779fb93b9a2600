/* unit_plugin_common.h — shared pieces of the tiny plugins the loader unit
 * tests load: a sink that does nothing and a descriptor builder. Test code
 * only; never shipped. */
#ifndef TSM_UNIT_PLUGIN_COMMON_H
#define TSM_UNIT_PLUGIN_COMMON_H

#include <string.h>

#include <tokenspeed/metric_reporter.h>

static int unit_emit(void *self, const tsm_metric_event *event, tsm_buffer *error) {
    (void)self; (void)event; (void)error;
    return TSM_OK;
}

static int unit_close(void *self, int64_t timeout_ns, tsm_buffer *error) {
    (void)self; (void)timeout_ns; (void)error;
    return TSM_OK;
}

static const tsm_sink_vtable unit_sink_vtable = {sizeof(tsm_sink_vtable), unit_emit, unit_close};

static int unit_validate(void *ud, const char *cfg, size_t n, tsm_buffer *normalized,
                         tsm_buffer *error) {
    (void)ud;
    if (strstr(cfg, "\"reject\"") != NULL) {
        static const char message[] = "setting 'reject' is not supported";
        error->assign(error, message, sizeof message - 1);
        return TSM_ERROR;
    }
    if (strstr(cfg, "\"array\"") != NULL) {
        normalized->assign(normalized, "[1,2]", 5);
        return TSM_OK;
    }
    if (n == 2 && memcmp(cfg, "{}", 2) == 0) {
        static const char defaults[] = "{\"queue_size\":100}";
        normalized->assign(normalized, defaults, sizeof defaults - 1);
    }
    return TSM_OK; /* anything else: accepted as given (buffer left empty) */
}

static int unit_create_sink(void *ud, const char *cfg, size_t n, tsm_sink *sink,
                            tsm_buffer *error) {
    (void)ud; (void)cfg; (void)n; (void)error;
    sink->vtable = &unit_sink_vtable;
    sink->self = NULL;
    return TSM_OK;
}

static tsm_reporter_descriptor unit_descriptor(const char *name, uint32_t override_flag) {
    tsm_reporter_descriptor d;
    memset(&d, 0, sizeof d);
    d.struct_size = sizeof d;
    d.name = name;
    d.validate = unit_validate;
    d.create_sink = unit_create_sink;
    d.start_node = NULL;
    d.override = override_flag;
    return d;
}

#endif
