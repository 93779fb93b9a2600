// engine_options.cpp — the public Options taken out of an engine's argv or
// read from its environment, and their mapping onto the launcher's options,
// by the table and the one check of config/. Never loads or starts anything.
#include "api/engine_options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <string_view>
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

std::string metrics_flag_variable(const std::string& flag) {
  if (flag == "--enable-metrics") return "TOKENSPEED_METRICS_ENABLE";
  std::string variable = "TOKENSPEED_METRICS_";
  for (const char c : std::string_view(flag).substr(flag.starts_with("--metrics-") ? 10 : 2)) {
    variable += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return variable;
}

namespace {

// A switch's variable: what a shell user writes for yes and for no.
bool switch_value(const std::string& variable, const std::string& value) {
  std::string lower;
  for (const char c : value)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower.empty() || lower == "0" || lower == "false" || lower == "no" || lower == "off") {
    return false;
  }
  throw StartupError({"", "", variable}, "expected 1, true, yes or on (or 0, false, no, off)");
}

}  // namespace

Options metrics_options_from_environment() {
  std::vector<std::string> args;
  std::map<std::string, std::string> variable_of;  // flag -> its variable, for errors
  for (const MetricsFlag& row : kMetricsFlags) {
    const std::string flag = flag_spelling(row);
    const std::string variable = metrics_flag_variable(flag);
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr) continue;
    variable_of[flag] = variable;
    if (std::holds_alternative<bool Options::*>(row.field)) {
      if (switch_value(variable, value)) args.push_back(flag);
      continue;
    }
    // The plugin directories are a list, as PATH is.
    std::vector<std::string> values{value};
    if (flag == "--metrics-plugin-dir") {
      values.clear();
      std::string_view rest(value);
      for (std::size_t colon; (colon = rest.find(':')) != std::string_view::npos;
           rest.remove_prefix(colon + 1)) {
        if (colon > 0) values.emplace_back(rest.substr(0, colon));
      }
      if (!rest.empty()) values.emplace_back(rest);
    }
    for (const std::string& each : values) args.push_back(flag + "=" + each);
  }
  try {
    return extract_metrics_options(args).options;
  } catch (const StartupError& error) {
    // Named as the operator set it: the variable, not the flag it stands for.
    const auto found = variable_of.find(error.key());
    if (found == variable_of.end()) throw;
    throw StartupError({error.reporter(), error.file(), found->second}, error.message());
  }
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
