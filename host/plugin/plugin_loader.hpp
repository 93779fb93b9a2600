// plugin_loader.hpp — finds plugin files in the plugin directories, refuses
// insecure or disabled ones, loads the rest with Boost.DLL and calls their
// tsm_register once per process. Startup only; never unloads a plugin.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "plugin/reporter_registry.hpp"

namespace tokenspeed::metrics {

enum class PluginStatus { loaded, disabled, failed, shadowed, insecure };

// "loaded", "disabled", "failed", "shadowed", "insecure".
const char* to_string(PluginStatus status) noexcept;

// What happened to one discovered plugin file.
struct PluginRecord {
  std::string path;  // the file as found in its directory
  std::string name;  // file name without a "lib" prefix and ".so"
  PluginStatus status = PluginStatus::failed;
  std::string reason;  // "" when loaded
  // loaded: the names it registered; failed: the names it tried to register
  // (all rolled back); otherwise empty.
  std::vector<std::string> reporters;
  // What the plugin logged while registering (a bridge's packages that
  // could not load); part of the explanation of an unknown reporter.
  std::vector<std::string> notes;
};

// Where to look and what to allow. from_environment() reads
// TOKENSPEED_PLUGIN_PATH and TOKENSPEED_DISABLE_PLUGINS.
struct PluginSearchOptions {
  std::vector<std::string> plugin_dirs;  // each --metrics-plugin-dir, in order
  std::string plugin_path;               // TOKENSPEED_PLUGIN_PATH, colon-separated
  std::string disabled_plugins;          // TOKENSPEED_DISABLE_PLUGINS, comma-separated
  std::string default_dir;               // the installed default directory
  bool allow_insecure = false;           // --metrics-allow-insecure-plugins
  // Warn about TOKENSPEED_DISABLE_PLUGINS names that match no plugin file and
  // about plugin directories that are something else than a directory (the
  // launcher does; its producers, loading the same list, do not repeat it).
  bool warn_unmatched_disabled = true;

  static PluginSearchOptions from_environment(std::vector<std::string> plugin_dirs,
                                              bool allow_insecure);
};

// The installed default plugin directory (TSM_DEFAULT_PLUGIN_DIR), resolved
// by plugin_dir_from_library.
std::string default_plugin_dir();

// A configured plugin directory as the host uses it: an absolute (or empty)
// one unchanged; a relative one taken from the directory of the file that
// holds the host's code (the host library, found with dladdr as the sink
// helper is), so that a relocatable install (the Python package) finds its
// plugins wherever it was unpacked. Never depends on the working directory.
std::string plugin_dir_from_library(const std::string& configured);

// The directories in search order: plugin_dirs, then plugin_path, then
// default_dir; empty entries dropped, a directory listed again skipped.
std::vector<std::string> plugin_directories(const PluginSearchOptions& options);

// "libfoo.so" -> "foo", "bar.so" -> "bar"; "" when the file is not a plugin
// file (no ".so" suffix, hidden, or nothing left of the name).
std::string plugin_name_from_file(std::string_view file_name);

// StrictModes-like check of a plugin directory or file: "" when it is owned by
// root or the current user and nobody else can write to it, otherwise the
// reason ("is writable by other users", "is not owned by root or the current
// user", "cannot be examined: ...").
std::string insecure_reason(const std::string& path);

// Threading: used from the startup thread only, once per process in
// production. Loaded libraries are kept in a process-wide list and never
// unloaded; each plugin file's tsm_register runs at most once per process.
class PluginLoader {
 public:
  using WarningSink = std::function<void(const std::string&)>;

  // warn receives one line per refused or failed plugin:
  // "plugin '<path>': <reason>", and one per TOKENSPEED_DISABLE_PLUGINS name
  // that matches no plugin file.
  PluginLoader(ReporterRegistry& registry, WarningSink warn);

  void load(const PluginSearchOptions& options);

  // Loads the one plugin file at path (not searched for) with the checks
  // load() makes on a file it found: a plugin file name, a regular file, an
  // ELF library of this architecture, tsm_register once per process, no
  // thread started, nothing rejected; the file's owner and permissions too
  // unless allow_insecure. The record is also appended to plugins(); a
  // refusal goes to warn like load()'s.
  const PluginRecord& load_one(const std::string& path, bool allow_insecure);

  const std::vector<std::string>& directories() const noexcept { return directories_; }
  const std::vector<PluginRecord>& plugins() const noexcept { return plugins_; }

  // Why a reporter name that nobody registered may be missing: the plugins
  // that tried to register it or are named like it and are not loaded, as
  // "plugin '<path>' is <status>: <reason>", then what any plugin logged
  // while registering; "" when there is none.
  std::string unavailable_reason(std::string_view reporter_name) const;

 private:
  void load_file(PluginRecord& record);
  bool disabled_by_a_plugin(const std::string& name) const;
  // One warning per disabled name that matches no plugin file (claimed: each
  // plugin name found, with its first file).
  void warn_of_unmatched_disabled(const std::set<std::string>& disabled,
                                  const std::map<std::string, std::string>& claimed) const;
  void refuse(PluginRecord& record, PluginStatus status, std::string reason);

  ReporterRegistry& registry_;
  WarningSink warn_;
  std::vector<std::string> directories_;
  std::vector<PluginRecord> plugins_;
};

}  // namespace tokenspeed::metrics
