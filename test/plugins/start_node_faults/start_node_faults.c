/* start_node_faults.c — outputs 'start_node_fails' (start_node returns an
 * error) and 'start_node_bad_config' (start_node returns a session and a
 * producer configuration that is a JSON array, not an object). */
#include "test_plugin_common.h"

typedef int (*start_node_fn)(void *, const char *, size_t, tsm_node_session *, tsm_buffer *,
                             tsm_buffer *);

static int create_sink(void *ud, const char *config, size_t size, tsm_sink *sink,
                       tsm_buffer *error) {
  (void)ud;
  (void)config;
  (void)size;
  (void)sink;
  return test_plugin_fail(error, "this output never creates sinks");
}

static int fail_start_node(void *ud, const char *config, size_t size, tsm_node_session *session,
                           tsm_buffer *producer_config, tsm_buffer *error) {
  (void)ud;
  (void)config;
  (void)size;
  (void)session;
  (void)producer_config;
  return test_plugin_fail(error, "cannot reach the node collector at 127.0.0.1:1");
}

static int bad_config_start_node(void *ud, const char *config, size_t size,
                                 tsm_node_session *session, tsm_buffer *producer_config,
                                 tsm_buffer *error) {
  (void)ud;
  (void)config;
  (void)size;
  (void)error;
  session->vtable = &test_plugin_null_session_vtable;
  session->self = NULL;
  return test_plugin_answer(producer_config, "[\"socket\", 7]");
}

static int add(const tsm_host_api *host, const char *name, start_node_fn start_node,
               tsm_buffer *error) {
  tsm_reporter_descriptor descriptor = test_plugin_descriptor(name, test_plugin_validate_echo);
  descriptor.create_sink = create_sink;
  descriptor.start_node = start_node;
  return test_plugin_register_descriptor(host, &descriptor, error);
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  if (add(host, "start_node_fails", fail_start_node, error) != TSM_OK) return TSM_ERROR;
  return add(host, "start_node_bad_config", bad_config_start_node, error);
}
