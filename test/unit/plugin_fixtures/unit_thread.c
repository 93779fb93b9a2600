/* unit_thread.c — registers "unit_thread" and starts a thread during
 * registration, which the host must reject. The thread parks forever. */
#include <pthread.h>
#include <unistd.h>

#include "test_plugin_common.h"

static void *park(void *arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  pthread_t thread;
  tsm_reporter_descriptor d = test_plugin_descriptor("unit_thread", test_plugin_validate_unit);
  int status = host->register_metric_reporter(host->host_data, &d, error);
  if (pthread_create(&thread, NULL, park, NULL) == 0) pthread_detach(thread);
  return status;
}
