/* validate_returns_non_object.c — models an output whose validate succeeds but
 * answers something other than a JSON object: 'validate_returns_non_object'
 * answers a JSON array, 'validate_returns_garbage' answers text that is not
 * JSON at all. */
#include "test_plugin_common.h"

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  int status =
      test_plugin_register_answering(host, "validate_returns_non_object", "[1,2,3]", error);
  if (status != TSM_OK) return status;
  return test_plugin_register_answering(host, "validate_returns_garbage", "{endpoint: not json",
                                        error);
}
