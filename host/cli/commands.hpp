// commands.hpp — the subcommands of the tokenspeed-metrics executable.
// Each runs with argv[0] being the command name and returns the exit status:
// 0 success, 1 runtime failure, 2 startup or usage error, and for the
// commands that run a node (simulate) 3, 4 and 5 below.
// Tested in test/cli/ (each command run as a user runs it).
#pragma once

namespace tokenspeed::metrics::cli {

// An output failed in some process: its sink could not be created, was
// disabled, failed to close or was abandoned at close, or its plugin
// delivered nothing while losing events; or a producer had to be killed at
// the shutdown budget or exited on its own.
inline constexpr int kExitOutputFailed = 3;
// A producer process crashed (died by a signal the launcher did not send).
// Takes precedence over kExitOutputFailed.
inline constexpr int kExitProducerCrashed = 4;
// Nothing failed, but an output's plugin lost events in some process (a
// "degraded" row: given up after retries, refused by the back end, its
// queue full). Both statuses above take precedence.
inline constexpr int kExitEventsLost = 5;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

}  // namespace tokenspeed::metrics::cli
