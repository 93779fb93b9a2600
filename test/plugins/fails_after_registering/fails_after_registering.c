/* fails_after_registering.c — models a plugin whose registration fails part
 * way: it declares the output 'rolled_back_output', then reports an error.
 * Built with -DREGISTRATION_SUCCEEDS it declares the same name and succeeds. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  int status = test_plugin_register(host, "rolled_back_output", test_plugin_validate_echo, error);
  if (status != TSM_OK) return status;
#ifdef REGISTRATION_SUCCEEDS
  return TSM_OK;
#else
  return test_plugin_fail(error, "the output's runtime library is missing");
#endif
}
