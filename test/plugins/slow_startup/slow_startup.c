/* slow_startup.c — outputs whose startup call blocks (the fault: a plugin
 * stuck at startup, as one waiting on an unreachable server would be):
 * 'slow_validate' in validate, 'slow_start_node' in start_node.
 * Before it blocks, the call creates the file named by the environment
 * variable TSM_TEST_STARTUP_MARKER (when set), so a test knows startup got
 * there. It blocks while the file named by TSM_TEST_STARTUP_HOLD exists, or
 * for an hour when that variable is not set. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_plugin_common.h"

static void mark_and_block(void) {
  const char *marker = getenv("TSM_TEST_STARTUP_MARKER");
  const char *hold = getenv("TSM_TEST_STARTUP_HOLD");
  struct timespec hour = {3600, 0};
  struct timespec pause = {0, 10 * 1000 * 1000};
  struct stat info;
  if (marker != NULL && marker[0] != '\0') {
    int fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  if (hold != NULL && hold[0] != '\0') {
    while (stat(hold, &info) == 0) nanosleep(&pause, NULL);
    return;
  }
  while (nanosleep(&hour, &hour) != 0) {
  }
}

static int slow_validate(void *ud, const char *config, size_t size, tsm_buffer *normalized,
                         tsm_buffer *error) {
  mark_and_block();
  return test_plugin_validate_echo(ud, config, size, normalized, error);
}

static int slow_start_node(void *ud, const char *config, size_t size, tsm_node_session *session,
                           tsm_buffer *producer_config, tsm_buffer *error) {
  (void)ud;
  (void)config;
  (void)size;
  (void)error;
  mark_and_block();
  session->vtable = &test_plugin_null_session_vtable;
  session->self = NULL;
  return test_plugin_answer(producer_config, "{}");
}

TSM_EXPORT int tsm_register(const tsm_host_api *host, tsm_buffer *error) {
  tsm_reporter_descriptor descriptor;
  if (!test_plugin_api_supported(host)) return TSM_UNSUPPORTED_API;
  if (test_plugin_register(host, "slow_validate", slow_validate, error) != TSM_OK) return TSM_ERROR;
  descriptor = test_plugin_descriptor("slow_start_node", test_plugin_validate_echo);
  descriptor.start_node = slow_start_node;
  return test_plugin_register_descriptor(host, &descriptor, error);
}
