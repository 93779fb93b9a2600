// reporter_config.hpp — the startup selection of outputs (--enable-metrics,
// --metrics-reporters, --metrics-reporter-config) and the rules of the JSON
// file. Validates everything; never creates a sink or node resource.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "plugin/plugin_loader.hpp"
#include "plugin/reporter.hpp"
#include "plugin/reporter_registry.hpp"
#include "config/isolation_settings.hpp"
#include "tokenspeed/metrics/options.hpp"

namespace tokenspeed::metrics {

// One selected external output with its normalized configuration.
struct SelectedOutput {
  std::string name;
  const Reporter* reporter = nullptr;  // owned by the registry
  boost::json::object config;          // what validate returned
  IsolationSettings isolation{};       // the host's keys, taken out before validate
};

// The result of startup validation.
struct ReporterSelection {
  bool enabled = false;                 // --enable-metrics was given
  bool prometheus = false;              // the built-in output is selected
  std::vector<std::string> order;       // every selected name, "prometheus" included
  std::vector<SelectedOutput> outputs;  // the external outputs, in selection order
  // Warnings about the configuration file, one line each (a secret in a file
  // other users can read); said once the whole selection is valid.
  std::vector<std::string> warnings;
};

// Splits the --metrics-reporters values at commas, trims blanks and keeps the
// first occurrence of each name (a name selected twice is selected once).
// Without any value the selection is {"prometheus"}. Throws StartupError on an
// empty name.
std::vector<std::string> parse_reporter_selection(const std::vector<std::string>& values);

// One line per selection or plugin search flag given without --enable-metrics
// ("--metrics-reporters is ignored without --enable-metrics"); empty when
// metrics are enabled.
std::vector<std::string> ignored_flag_warnings(const Options& options);

// Reads the reporter configuration file: a JSON object, no duplicate keys at
// any depth. Throws StartupError naming the file (and key) otherwise.
boost::json::object read_reporter_config_file(const std::string& path);

// Applies the selection and file rules against the registered reporters and
// calls validate for each selected external output. loader (may be null)
// explains why an unknown name is unavailable. Throws StartupError. When the
// file is a regular file with the group or other read bit set and an entry
// holds a non-empty value for a setting its reporter describes as secret,
// adds one warning per such output to the result (reporter, file, key paths,
// mode; never the value).
ReporterSelection resolve_reporters(const Options& options, const ReporterRegistry& registry,
                                    const PluginLoader* loader);

}  // namespace tokenspeed::metrics
