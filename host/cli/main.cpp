// main.cpp — the tokenspeed-metrics executable: picks the subcommand and
// turns anything that escapes it into a one-line error. Owns no behaviour.
// Tested in test/cli/test_cli_usage.py.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>

#include <tokenspeed/metric_reporter.h>

#include "cli/commands.hpp"
#include "core/host_version.hpp"
#include "core/startup_error.hpp"
#include "process/fatal_signal_handler.hpp"

namespace tokenspeed::metrics::cli {

int run_plugins(int argc, char** argv);   // cli_plugins.cpp
int run_check(int argc, char** argv);     // cli_check.cpp
int run_simulate(int argc, char** argv);  // cli_simulate.cpp
int run_producer(int argc, char** argv);  // cli_producer.cpp
int run_flags(int argc, char** argv);     // flags_command.cpp

namespace {

constexpr Command kCommands[] = {
    {"help", "show this help", nullptr},
    {"plugins", "list plugin files, their status and reporters", run_plugins},
    {"check", "validate the metrics flags and configuration without starting outputs", run_check},
    {"simulate", "run the simulated engine: a launcher, scheduler ranks and a frontend",
     run_simulate},
    {"flags", "list the metrics flags with their defaults (--markdown: as the docs' tables)",
     run_flags},
    {"producer", "a producer process of simulate (started by it, not by hand)", run_producer},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: tokenspeed-metrics <command> [options]\n"
               "       tokenspeed-metrics --version\n\ncommands:\n");
  for (const Command& command : kCommands) {
    std::fprintf(out, "  %-10s %s\n", command.name, command.summary);
  }
  std::fprintf(out, "\nRun 'tokenspeed-metrics <command> --help' for the options of a command.\n");
}

// What a command printed must reach its reader: a full disk or a closed
// pipe behind stdout is an error, not a silent exit 0.
int with_output_written(int status) {
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return status;
  std::fprintf(stderr, "tokenspeed-metrics: cannot write the output to stdout: %s\n",
               std::strerror(errno));
  return status == 0 ? 1 : status;
}

}  // namespace
}  // namespace tokenspeed::metrics::cli

int main(int argc, char** argv) {
  using namespace tokenspeed::metrics;
  if (argc < 2) {
    cli::print_usage(stderr);
    return kStartupErrorExitStatus;
  }
  const char* name = argv[1];
  if (std::strcmp(name, "--version") == 0) {
    std::printf("tokenspeed-metrics %s (metric reporter API version %u)\n", host_version(),
                TSM_METRIC_REPORTER_API_VERSION);
    return cli::with_output_written(0);
  }
  // A crash (a plugin's included) is named on stderr before the process dies.
  install_fatal_signal_handler(name);
  if (std::strcmp(name, "help") == 0 || std::strcmp(name, "--help") == 0 ||
      std::strcmp(name, "-h") == 0) {
    cli::print_usage(stdout);
    return cli::with_output_written(0);
  }
  for (const cli::Command& command : cli::kCommands) {
    if (command.run == nullptr || std::strcmp(command.name, name) != 0) continue;
    try {
      return cli::with_output_written(command.run(argc - 1, argv + 1));
    } catch (const StartupError& error) {
      std::fprintf(stderr, "tokenspeed-metrics: %s\n", error.what());
      return kStartupErrorExitStatus;
    } catch (const std::exception& error) {
      std::fprintf(stderr, "tokenspeed-metrics: %s\n", error.what());
      return 1;
    }
  }
  std::fprintf(
      stderr, "tokenspeed-metrics: unknown command '%s' (see 'tokenspeed-metrics --help')\n", name);
  return kStartupErrorExitStatus;
}
