// engine_options.cpp — the public Options taken out of an engine's argv or
// read from its environment, and their mapping onto the launcher's options,
// by the table and the one check of config/. Never loads or starts anything.
#include "api/engine_options.hpp"

#include <cstdlib>
#include <sstream>

#include "config/metrics_flags.hpp"
#include "tokenspeed/metrics/startup_error.hpp"

namespace tokenspeed::metrics {

ExtractedOptions extract_metrics_options(const std::vector<std::string>& args) {
  ExtractedFlags flags = extract_flags(args, all_metrics_flags());
  Options options = options_from_flags(flags.values);
  check_options(options);  // a value out of range is an error here, as on the command line
  return ExtractedOptions{std::move(options), std::move(flags.rest)};
}

Options extract_metrics_options(int& argc, char** argv) {
  if (argc < 1 || argv == nullptr) return {};
  const std::vector<std::string> args(argv + 1, argv + argc);
  ExtractedOptions extracted = extract_metrics_options(args);
  // Keep the engine's own arguments, as the same char* pointers, in order:
  // each remaining argument is the next unused argv entry equal to it.
  int out = 1;
  int next = 1;
  for (const std::string& kept : extracted.rest) {
    while (next < argc && kept != argv[next]) ++next;
    if (next >= argc) break;
    argv[out++] = argv[next++];
  }
  argc = out;
  argv[argc] = nullptr;
  return std::move(extracted.options);
}

std::string metrics_flag_variable(const std::string& flag) { return flag_variable(flag); }

Options metrics_options_from_environment() {
  return options_from_environment(
      [](const std::string& variable) -> const char* { return std::getenv(variable.c_str()); });
}

std::string metrics_options_help() {
  std::ostringstream out;
  out << all_metrics_flags();
  return out.str();
}

LauncherOptions launcher_options_from(const Options& options) {
  LauncherOptions launcher;
  launcher.settings = check_options(options);
  return launcher;
}

}  // namespace tokenspeed::metrics
