/* several_names.c — models one plugin that declares several outputs:
 * 'several_names_a', 'several_names_b' and 'several_names_c'. Each validate
 * ignores its input and answers {"reporter": "<its name>"}, so a caller can
 * tell the normalized configuration from the one it passed in. */
#include "test_plugin_common.h"

#define DECLARE(name) \
  test_plugin_register_answering(host, name, "{\"reporter\": \"" name "\"}", error)

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  int status = DECLARE("several_names_a");
  if (status == TSM_OK) status = DECLARE("several_names_b");
  if (status == TSM_OK) status = DECLARE("several_names_c");
  return status;
}
