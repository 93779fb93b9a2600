// reporter_config.cpp — selection and configuration-file rules of startup.
// Calls only validate on plugins; never creates a sink or a node session.
#include "config/reporter_config.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <optional>
#include <set>

#include "config/metrics_flag_table.hpp"
#include "config/secret_redaction.hpp"
#include "core/file_mode.hpp"

#include "core/bounded_file.hpp"
#include "core/name_suggestion.hpp"
#include "core/startup_error.hpp"
#include "core/strict_json.hpp"
#include "core/input_excerpt.hpp"

namespace tokenspeed::metrics {
namespace {

std::string trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

std::string unknown_reporter_message(const std::string& name, const ReporterRegistry& registry,
                                     const PluginLoader* loader) {
  std::string message = "unknown reporter";
  const std::string why = loader == nullptr ? std::string() : loader->unavailable_reason(name);
  if (!why.empty()) return message + ": " + why;
  message += ": no loaded plugin registers this name";
  if (loader != nullptr) {
    message += " (plugin directories:";
    if (loader->directories().empty()) message += " none";
    for (const std::string& dir : loader->directories()) message += " '" + dir + "'";
    message += ")";
  }
  // What could have been meant: every selectable name, and the closest one.
  std::vector<std::string> available = registry.names();
  available.emplace_back(kPrometheusReporterName);
  std::sort(available.begin(), available.end());
  message += "; available reporters:";
  const char* separator = " ";
  for (const std::string& candidate : available) {
    message += separator + ("'" + candidate + "'");
    separator = ", ";
  }
  if (const std::string suggestion = closest_name(name, available); !suggestion.empty()) {
    message += "; did you mean '" + suggestion + "'?";
  }
  return message;
}

// "otlp: /etc/tsm/reporters.json: 'headers.api-key' holds a secret and is
// readable by other users (mode 0644); restrict it (chmod 600) or use
// header_files". Names keys, never values.
std::string secret_file_warning(const std::string& reporter, const std::string& path, unsigned mode,
                                const std::vector<HeldSecret>& held) {
  constexpr std::size_t kNamedKeys = 5;
  std::string keys;
  std::vector<std::string> file_settings;
  for (std::size_t i = 0; i < held.size(); ++i) {
    const HeldSecret& secret = held[i];
    if (!secret.file_setting.empty() && std::find(file_settings.begin(), file_settings.end(),
                                                  secret.file_setting) == file_settings.end()) {
      file_settings.push_back(secret.file_setting);
    }
    if (i < kNamedKeys) keys += (i == 0 ? "'" : ", '") + secret.key_path + "'";
  }
  if (held.size() > kNamedKeys)
    keys += " and " + std::to_string(held.size() - kNamedKeys) + " more";
  std::string line = reporter + ": " + path + ": " + keys +
                     (held.size() == 1 ? " holds a secret and is" : " hold secrets and are") +
                     " readable by other users (mode " + mode_text(mode) +
                     "); restrict it (chmod 600)";
  for (std::size_t i = 0; i < file_settings.size(); ++i)
    line += (i == 0 ? " or use " : ", ") + file_settings[i];
  return line;
}

}  // namespace

std::vector<std::string> parse_reporter_selection(const std::vector<std::string>& values) {
  std::vector<std::string> selection;
  std::set<std::string> seen;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (start <= value.size()) {
      std::size_t end = value.find(',', start);
      if (end == std::string::npos) end = value.size();
      std::string name = trim(std::string_view(value).substr(start, end - start));
      if (name.empty()) {
        throw StartupError({{}, {}, flag_spelling(metrics_flag(&Options::reporters))},
                           "empty reporter name in '" + input_excerpt(value) + "'");
      }
      if (seen.insert(name).second) selection.push_back(std::move(name));
      start = end + 1;
    }
  }
  if (selection.empty()) selection.emplace_back(kPrometheusReporterName);
  return selection;
}

std::vector<std::string> ignored_flag_warnings(const Options& options) {
  std::vector<std::string> warnings;
  if (options.enable_metrics) return warnings;
  for (const MetricsFlag& flag : kMetricsFlags) {
    const bool selects =
        flag.group == FlagGroup::selection || flag.group == FlagGroup::plugin_search;
    if (selects && flag.name != "enable-metrics" && is_given(options, flag)) {
      warnings.push_back(flag_spelling(flag) + " is ignored without --enable-metrics");
    }
  }
  return warnings;
}

boost::json::object read_reporter_config_file(const std::string& path) {
  std::string contents;
  try {
    contents = read_bounded_file(path, kConfigurationFileLimit);
  } catch (const FileReadError& error) {
    throw StartupError({{}, path, {}}, std::string("the reporter configuration ") + error.what());
  }
  boost::json::value document;
  try {
    document = parse_strict_json(contents);
  } catch (const StrictJsonError& error) {
    if (error.kind() == StrictJsonError::Kind::duplicate_key) {
      // The keys are the file's text: quoted in part when they are long.
      const std::string& key = error.path().empty() ? std::string() : error.path().back();
      throw StartupError(
          {input_excerpt(error.top_level_key()), path, input_excerpt(error.key_path())},
          "duplicate key '" + input_excerpt(key) + "'");
    }
    throw StartupError({{}, path, {}}, error.what());
  }
  if (!document.is_object()) {
    throw StartupError({{}, path, {}},
                       "the top level of the reporter configuration must be a JSON object");
  }
  return std::move(document.as_object());
}

ReporterSelection resolve_reporters(const Options& options, const ReporterRegistry& registry,
                                    const PluginLoader* loader) {
  ReporterSelection result;
  result.enabled = options.enable_metrics;
  if (!options.enable_metrics) return result;

  result.order = parse_reporter_selection(options.reporters);
  for (const std::string& name : result.order) {
    if (name == kPrometheusReporterName) {
      result.prometheus = true;
      continue;
    }
    const Reporter* reporter = registry.find(name);
    if (reporter == nullptr) {
      throw StartupError({input_excerpt(name), {}, {}},
                         unknown_reporter_message(name, registry, loader));
    }
    result.outputs.push_back(SelectedOutput{name, reporter, {}});
  }

  boost::json::object file;
  const std::string& path = options.reporter_config;
  if (!path.empty()) {
    file = read_reporter_config_file(path);
    const std::set<std::string> selected(result.order.begin(), result.order.end());
    for (const auto& entry : file) {
      const std::string name(entry.key());
      const std::string quoted = input_excerpt(name);  // a key of the file, maybe huge
      if (name == kPrometheusReporterName) {
        throw StartupError({name, path, name},
                           "prometheus is configured by its command-line flags, not by this file");
      }
      if (selected.count(name) == 0) {
        throw StartupError({quoted, path, quoted},
                           "configuration for an output that is not selected (select it with "
                           "--metrics-reporters " +
                               quoted + ")");
      }
      if (!entry.value().is_object()) {
        throw StartupError({quoted, path, quoted}, "the configuration entry must be a JSON object");
      }
    }
  }

  for (SelectedOutput& output : result.outputs) {
    // An external output without a configuration entry receives an empty object.
    const boost::json::value* entry = file.if_contains(output.name);
    boost::json::object config = entry == nullptr ? boost::json::object() : entry->as_object();
    output.isolation = take_isolation_settings(config, output.name, path);
    output.config = output.reporter->validate(config, path);
  }

  // A secret in a file others can read: said, never an error.
  const std::optional<unsigned> mode = path.empty() ? std::nullopt : readable_by_others(path);
  for (const SelectedOutput& output : result.outputs) {
    const boost::json::value* entry = mode ? file.if_contains(output.name) : nullptr;
    if (entry == nullptr) continue;
    const std::vector<HeldSecret> held =
        SecretSettings(output.reporter->settings_description()).held(entry->as_object());
    if (!held.empty())
      result.warnings.push_back(secret_file_warning(output.name, path, *mode, held));
  }
  return result;
}

}  // namespace tokenspeed::metrics
