/* unit_two_names.c — registers two reporters, "unit.alpha" and "unit-beta"
 * (the second with start_node). Loader unit tests only. */
#include "test_plugin_common.h"

static int start_node(void *ud, const char *cfg, size_t n, tsm_node_session *session,
                      tsm_buffer *producer_config, tsm_buffer *error) {
  (void)ud;
  (void)cfg;
  (void)n;
  (void)error;
  session->vtable = &test_plugin_null_session_vtable;
  session->self = NULL;
  return test_plugin_answer(producer_config, "{\"endpoint\":\"node-local\"}");
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor alpha = test_plugin_descriptor("unit.alpha", test_plugin_validate_unit);
  tsm_reporter_descriptor beta = test_plugin_descriptor("unit-beta", test_plugin_validate_unit);
  int status;
  beta.start_node = start_node;
  status = test_plugin_register_descriptor(host, &alpha, error);
  if (status != TSM_OK) return status;
  return test_plugin_register_descriptor(host, &beta, error);
}
