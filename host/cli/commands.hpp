// commands.hpp — the subcommands of the tokenspeed-metrics executable.
// Each runs with argv[0] being the command name and returns the exit status:
// 0 success, 1 runtime failure, 2 startup or usage error.
#pragma once

namespace tokenspeed::metrics::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

}  // namespace tokenspeed::metrics::cli
