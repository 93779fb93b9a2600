// plugins_command.cpp — `tokenspeed-metrics plugins`: lists every discovered
// plugin file with its status and reporters, like gst-inspect. Loads and
// registers plugins; never calls validate, create_sink or start_node.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <boost/program_options/options_description.hpp>

#include "config/metrics_flags.hpp"
#include "config/plugin_loader.hpp"
#include "config/reporter_registry.hpp"

namespace tokenspeed::metrics::cli {
namespace {

namespace po = boost::program_options;

constexpr const char* kSynopsis =
    "[--json] [--metrics-plugin-dir DIR]... [--metrics-allow-insecure-plugins]";

std::string overridden_note(const ReporterRegistry& registry, const Reporter& reporter) {
  const Reporter* owner = registry.find(reporter.name());
  if (owner == nullptr || owner == &reporter) return {};
  return " (overridden by '" + owner->plugin_path() + "')";
}

void print_text(const PluginLoader& loader, const ReporterRegistry& registry) {
  std::cout << "Plugin directories, in search order:\n";
  if (loader.directories().empty()) std::cout << "  (none)\n";
  for (const std::string& dir : loader.directories()) {
    std::error_code ec;
    std::cout << "  " << dir << (std::filesystem::is_directory(dir, ec) ? "" : " (not found)")
              << '\n';
  }
  std::size_t loaded = 0;
  for (const PluginRecord& record : loader.plugins()) {
    std::cout << '\n' << record.name << ": " << to_string(record.status) << '\n';
    std::cout << "  file:   " << record.path << '\n';
    if (!record.reason.empty()) std::cout << "  reason: " << record.reason << '\n';
    for (const std::string& note : record.notes) std::cout << "  note:   " << note << '\n';
    if (record.status != PluginStatus::loaded) continue;
    ++loaded;
    for (const Reporter* reporter : registry.registered_by(record.path)) {
      std::cout << "  reporter " << reporter->name()
                << "  start_node: " << (reporter->has_start_node() ? "yes" : "no")
                << "  override: " << (reporter->override_flag() ? "yes" : "no")
                << overridden_note(registry, *reporter) << '\n';
    }
  }
  std::cout << '\n' << loader.plugins().size() << " plugin file(s), " << loaded << " loaded\n";
}

void print_json(const PluginLoader& loader, const ReporterRegistry& registry) {
  boost::json::object document;
  boost::json::array dirs;
  for (const std::string& dir : loader.directories()) dirs.emplace_back(dir);
  document["plugin_dirs"] = std::move(dirs);
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
        entry["start_node"] = reporter->has_start_node();
        entry["override"] = reporter->override_flag();
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
  std::cout << boost::json::serialize(document) << '\n';
}

}  // namespace

int run_plugins(int argc, char** argv) {
  po::options_description description("options");
  description.add_options()("help,h", "show this help")("json", "print one JSON document");
  add_plugin_search_options(description);
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    std::cout << usage("plugins", kSynopsis, description)
              << "\nLists every plugin file found in the plugin directories (each "
                 "--metrics-plugin-dir,\nthen TOKENSPEED_PLUGIN_PATH, then the installed "
                 "directory) with its status\n(loaded, disabled, failed, shadowed, insecure) and "
                 "the reporters it registered.\n";
    return 0;
  }
  const MetricsOptions options = metrics_options_from(values);
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
