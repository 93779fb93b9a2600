// plugins_command.cpp — `tokenspeed-metrics plugins`: lists every discovered
// plugin file with its status and reporters, like gst-inspect. Loads and
// registers plugins; never calls validate, create_sink or start_node.
// Tested in test/cli/test_plugins_command.py and test/cli/test_secrets.py.
#include <cstdio>
#include <iostream>
#include <string>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/program_options/options_description.hpp>

#include "config/metrics_flag_table.hpp"
#include "config/metrics_flags.hpp"
#include "config/secret_redaction.hpp"
#include "plugin/plugin_loader.hpp"
#include "plugin/plugin_paths.hpp"
#include "plugin/reporter_registry.hpp"

namespace tokenspeed::metrics::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kSynopsis =
    "[--json] [--metrics-plugin-dir DIR]... [--metrics-allow-insecure-plugins]";

// The plugin file of the reporter that replaced this one, or "".
std::string overridden_by(const ReporterRegistry& registry, const Reporter& reporter) {
  const Reporter* owner = registry.find(reporter.name());
  if (owner == nullptr || owner == &reporter) return {};
  return owner->plugin_path();
}

std::string overridden_note(const ReporterRegistry& registry, const Reporter& reporter) {
  const std::string owner = overridden_by(registry, reporter);
  return owner.empty() ? std::string() : " (overridden by '" + owner + "')";
}

std::size_t loaded_count(const PluginLoader& loader) {
  std::size_t loaded = 0;
  for (const PluginRecord& record : loader.plugins())
    loaded += record.status == PluginStatus::loaded ? 1 : 0;
  return loaded;
}

// The reporter's settings description as a JSON array, the default of a
// secret setting shown as "<secret>", or null when it has none or it is not
// a JSON array of objects.
boost::json::value settings_of(const Reporter& reporter) {
  if (reporter.settings_description().empty()) return nullptr;
  boost::json::error_code error;
  boost::json::value parsed = boost::json::parse(reporter.settings_description(), error);
  if (error || !parsed.is_array()) return nullptr;
  for (const boost::json::value& row : parsed.as_array()) {
    if (!row.is_object() || !row.as_object().contains("key")) return nullptr;
  }
  return redact_settings_description(parsed);
}

std::string text_of(const boost::json::object& row, const char* key) {
  const boost::json::value* value = row.if_contains(key);
  if (value == nullptr) return {};
  if (value->is_string()) return std::string(value->as_string());
  return boost::json::serialize(*value);
}

// One line per row of rows (an object's fields as "tls.ca_file", after it),
// then its description indented.
void print_setting_rows(const boost::json::array& rows, const std::string& prefix) {
  for (const boost::json::value& entry : rows) {
    if (!entry.is_object()) continue;
    const boost::json::object& row = entry.as_object();
    const std::string key = prefix + text_of(row, "key");
    std::string line = "      " + key + "  " + text_of(row, "type");
    if (row.contains("choices")) line += " " + text_of(row, "choices");
    if (row.contains("min")) line += " [" + text_of(row, "min") + ", " + text_of(row, "max") + "]";
    const boost::json::value* secret = row.if_contains("secret");
    if (secret != nullptr && secret->is_bool() && secret->get_bool()) line += "  secret";
    const boost::json::value* fallback = row.if_contains("default");
    line += fallback != nullptr ? "  default: " + boost::json::serialize(*fallback) : "  required";
    std::cout << line << '\n';
    const std::string description = text_of(row, "description");
    if (!description.empty()) std::cout << "          " << description << '\n';
    const boost::json::value* fields = row.if_contains("fields");
    if (fields != nullptr && fields->is_array()) print_setting_rows(fields->get_array(), key + ".");
  }
}

// One key per line, then its description indented, as gst-inspect shows an
// element's properties; a secret's default reads "<secret>".
void print_settings(const Reporter& reporter) {
  const boost::json::value settings = settings_of(reporter);
  if (settings.is_null()) {
    if (!reporter.settings_description().empty())
      std::cout << "    settings: (the plugin's description is not a JSON array of objects)\n";
    return;
  }
  std::cout << "    settings:\n";
  print_setting_rows(settings.as_array(), "");
}

void print_text(const PluginLoader& loader, const ReporterRegistry& registry) {
  std::cout << "Plugin directories, in search order:\n";
  if (loader.directories().empty()) std::cout << "  (none)\n";
  for (const std::string& dir : loader.directories()) {
    const std::string problem = plugin_directory_problem(dir);
    std::cout << "  " << dir << (problem.empty() ? "" : " (" + problem + ")") << '\n';
  }
  for (const PluginRecord& record : loader.plugins()) {
    std::cout << '\n' << record.name << ": " << to_string(record.status) << '\n';
    std::cout << "  file:   " << record.path << '\n';
    if (!record.reason.empty()) std::cout << "  reason: " << record.reason << '\n';
    for (const std::string& note : record.notes) std::cout << "  note:   " << note << '\n';
    if (record.status != PluginStatus::loaded) continue;
    for (const Reporter* reporter : registry.registered_by(record.path)) {
      std::cout << "  reporter " << reporter->name()
                << (reporter->version().empty() ? "" : "  version: " + reporter->version())
                << "  start_node: " << (reporter->has_start_node() ? "yes" : "no")
                << "  override: " << (reporter->override_flag() ? "yes" : "no")
                << overridden_note(registry, *reporter) << '\n';
      print_settings(*reporter);
    }
  }
  std::cout << '\n'
            << loader.plugins().size() << " plugin file(s), " << loaded_count(loader) << " loaded\n"
            << "Select reporters with " << flag_spelling(metrics_flag(&Options::reporters))
            << " NAME; a view's outputs (" << flag_spelling(metrics_flag(&Options::metric_views))
            << " FILE) name them to choose which families each receives.\n";
}

void print_json(const PluginLoader& loader, const ReporterRegistry& registry) {
  boost::json::object document;
  boost::json::array dirs;
  for (const std::string& dir : loader.directories()) dirs.emplace_back(dir);
  document["plugin_dirs"] = std::move(dirs);
  // The same, with what the text marks "(not found)" or "(is a file, not a directory)".
  boost::json::array directories;
  for (const std::string& dir : loader.directories()) {
    const std::string problem = plugin_directory_problem(dir);
    directories.emplace_back(
        boost::json::object{{"path", dir}, {"found", problem.empty()}, {"problem", problem}});
  }
  document["directories"] = std::move(directories);
  boost::json::array plugins;
  for (const PluginRecord& record : loader.plugins()) {
    boost::json::object plugin;
    plugin["name"] = record.name;
    plugin["path"] = record.path;
    plugin["status"] = to_string(record.status);
    plugin["reason"] = record.reason;
    boost::json::array reporters;
    if (record.status == PluginStatus::loaded) {
      for (const Reporter* reporter : registry.registered_by(record.path)) {
        boost::json::object entry;
        entry["name"] = reporter->name();
        entry["version"] = reporter->version();
        entry["start_node"] = reporter->has_start_node();
        entry["override"] = reporter->override_flag();
        entry["overridden_by"] = overridden_by(registry, *reporter);
        entry["settings"] = settings_of(*reporter);
        reporters.emplace_back(std::move(entry));
      }
    }
    plugin["reporters"] = std::move(reporters);
    boost::json::array notes;
    for (const std::string& note : record.notes) notes.emplace_back(note);
    plugin["notes"] = std::move(notes);  // what it logged while registering
    plugins.emplace_back(std::move(plugin));
  }
  document["plugins"] = std::move(plugins);
  document["plugin_files"] = loader.plugins().size();
  document["loaded"] = loaded_count(loader);
  std::cout << boost::json::serialize(document) << '\n';
}

}  // namespace

int run_plugins(int argc, char** argv) {
  po::options_description description("options");
  description.add_options()("help,h", "show this help")("json", "print one JSON document");
  constexpr FlagGroup kPluginSearch[] = {FlagGroup::plugin_search};
  add_metrics_flags(description, kPluginSearch);
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    std::cout << usage("plugins", kSynopsis, description)
              << "\nLists every plugin file found in the plugin directories (each "
                 "--metrics-plugin-dir,\nthen TOKENSPEED_PLUGIN_PATH, then the installed "
                 "directory) with its status\n(loaded, disabled, failed, shadowed, insecure) and "
                 "the reporters it registered.\n";
    return 0;
  }
  const Options options = options_from_flags(values);
  ReporterRegistry registry;
  PluginLoader loader(registry, [](const std::string& line) {
    std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
  });
  loader.load(
      PluginSearchOptions::from_environment(options.plugin_dirs, options.allow_insecure_plugins));
  if (values.count("json") != 0) {
    print_json(loader, registry);
  } else {
    print_text(loader, registry);
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace tokenspeed::metrics::cli
