// helper_process.hpp — finding, starting, killing and describing the sink
// helper executable of isolated outputs. Never touches the shared channel's
// contents and never calls a plugin.
#pragma once

#include <sys/types.h>

#include <string>

namespace tokenspeed::metrics::isolation {

// The environment variable that overrides where the helper is.
inline constexpr const char* kHelperPathEnv = "TOKENSPEED_METRICS_SINK_HELPER";
inline constexpr const char* kHelperFileName = "tokenspeed-metrics-sink-helper";

// The helper executable: $TOKENSPEED_METRICS_SINK_HELPER when set, else the
// installed one relative to this library (<libdir>/../libexec/tokenspeed-metrics/),
// else one next to the library (a build tree). "" when none is executable.
std::string helper_executable();

struct HelperLaunch {
  std::string executable;
  std::string plugin_path;
  std::string reporter;
  int channel_fd = -1;  // becomes descriptor 3 in the helper
};

// Starts the helper with posix_spawn (no descriptor but 0-3 inherited).
// Returns its pid, or -1 with the reason in error. The pid is this
// process's own helper until helper_reaped(pid).
pid_t spawn_helper(const HelperLaunch& launch, std::string& error) noexcept;

// Called by the helper's supervisor once its waitpid returned the helper's
// exit (or ECHILD).
void helper_reaped(pid_t pid) noexcept;

// Reaps pid, a zombie child found by a PID-1 launcher's orphan reaper, unless
// it is a helper this process started and has not reaped yet: that one's
// exit status belongs to its supervisor. Holds the lock spawn_helper holds
// while it starts a helper, so a helper that ends at once is never taken
// from its supervisor. Returns true when pid was reaped here.
bool reap_unless_own_helper(pid_t pid) noexcept;

// "killed by SIGSEGV (segmentation fault)", "exited with status 3".
std::string describe_wait_status(int status);

}  // namespace tokenspeed::metrics::isolation
