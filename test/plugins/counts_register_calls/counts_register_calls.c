/* counts_register_calls.c — a well-behaved output, 'counts_register_calls',
 * that counts how often tsm_register ran in this process. Its validate
 * answers {"register_calls": N}. */
#include <stdio.h>

#include "test_plugin_common.h"

static unsigned register_calls;

static int validate(void *user_data, const char *config, size_t size, tsm_buffer *normalized,
                    tsm_buffer *error) {
  char json[64];
  (void)user_data;
  (void)config;
  (void)size;
  (void)error;
  snprintf(json, sizeof json, "{\"register_calls\":%u}", register_calls);
  return test_plugin_answer(normalized, json);
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  ++register_calls;
  return test_plugin_register(host, "counts_register_calls", validate, error);
}
