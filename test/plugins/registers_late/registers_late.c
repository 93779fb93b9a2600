/* registers_late.c — models a plugin that keeps the host's registration
 * function and calls it after tsm_register has returned (from validate),
 * trying to declare 'late_output'. Declares 'registers_late'; its validate
 * answers {"late_registration": "accepted"} or {"late_registration":
 * "rejected"} with what the host answered. */
#include "test_plugin_common.h"

static int (*saved_register)(void *, const tsm_reporter_descriptor *, tsm_buffer *);
static void *saved_host_data;

static void discard(tsm_buffer *buffer, const char *data, size_t size) {
  (void)buffer;
  (void)data;
  (void)size;
}

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor("late_output", validate);
  tsm_buffer late_error;
  (void)user_data;
  (void)config;
  (void)size;
  (void)error;
  late_error.struct_size = sizeof late_error;
  late_error.host_data = NULL;
  late_error.assign = discard;
  if (saved_register(saved_host_data, &descriptor, &late_error) == TSM_OK)
    return test_plugin_answer(normalized, "{\"late_registration\":\"accepted\"}");
  return test_plugin_answer(normalized, "{\"late_registration\":\"rejected\"}");
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  saved_register = host->register_metric_reporter;
  saved_host_data = host->host_data;
  return test_plugin_register(host, "registers_late", validate, error);
}
