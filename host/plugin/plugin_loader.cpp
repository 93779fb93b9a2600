// plugin_loader.cpp — directory scan, security checks, Boost.DLL loading and
// the guarded call of tsm_register (thread count, rollback). Never unloads a
// library and never calls a plugin factory other than tsm_register.
#include "plugin/plugin_loader.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <new>
#include <set>
#include <system_error>
#include <utility>

#include <boost/dll/shared_library.hpp>

#include "core/abi_buffer.hpp"
#include "core/bounded_file.hpp"
#include "core/host_image.hpp"
#include "plugin/elf_compatibility.hpp"
#include "core/name_suggestion.hpp"
#include "plugin/plugin_paths.hpp"
#include "core/plugin_call_context.hpp"
#include "core/thread_safety.hpp"

#ifndef TSM_DEFAULT_PLUGIN_DIR
#define TSM_DEFAULT_PLUGIN_DIR "/usr/local/lib/tokenspeed/metrics-plugins"
#endif

namespace tokenspeed::metrics {
namespace {

namespace fs = std::filesystem;

// Every library this process loaded, and the files whose tsm_register ran.
// Allocated once and never freed: plugins are not unloaded, not even at exit,
// because a plugin's threads may still be running then.
struct LoadedLibraries {
  Mutex mutex;
  std::vector<std::unique_ptr<boost::dll::shared_library>> libraries TSM_GUARDED_BY(mutex);
  std::set<std::pair<dev_t, ino_t>> registered TSM_GUARDED_BY(mutex);
};

LoadedLibraries* libraries_of_this_process = nullptr;

// A forked child is a process of its own: it registers its plugins again
// (the libraries stay loaded), and its copy of the mutex may have been held
// by another thread of the parent when it forked. The child runs one thread
// here, so the fresh mutex need not be taken.
void forget_registrations_in_child() noexcept TSM_NO_THREAD_SAFETY_ANALYSIS {
  new (&libraries_of_this_process->mutex) Mutex();
  libraries_of_this_process->registered.clear();
}

LoadedLibraries& loaded_libraries() {
  static auto* libraries = [] {
    libraries_of_this_process = new LoadedLibraries;
    ::pthread_atfork(nullptr, nullptr, &forget_registrations_in_child);
    return libraries_of_this_process;
  }();
  return *libraries;
}

// The number of threads of this process, from /proc/self/task; -1 if unknown.
long thread_count() noexcept {
  std::error_code ec;
  long count = 0;
  for (fs::directory_iterator it("/proc/self/task", ec), end; !ec && it != end; it.increment(ec)) {
    ++count;
  }
  return ec ? -1 : count;
}

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(separator, start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (!part.empty()) parts.emplace_back(part);
    start = end + 1;
  }
  return parts;
}

std::string getenv_string(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

constexpr const char* kAllowHint = " (allow with --metrics-allow-insecure-plugins)";

using RegisterFunction = int(const tsm_host_api*, tsm_buffer*);

// Why the file at path is no library of this architecture, or "". Checked
// before dlopen: glibc reports a library of another architecture as "No such
// file or directory", and a file swapped for a FIFO would block.
std::string elf_problem(const std::string& path) {
  try {
    const FileHandle file = open_regular_file(path);
    return elf_compatibility_problem(file.get());
  } catch (const FileReadError& error) {
    return error.what();
  }
}

// Loads the library at path into loaded, for good; nullptr and the reason in
// problem when it cannot be loaded.
boost::dll::shared_library* load_for_good(LoadedLibraries& loaded, const std::string& path,
                                          std::string& problem) TSM_REQUIRES(loaded.mutex) {
  auto library = std::make_unique<boost::dll::shared_library>();
  boost::dll::fs::error_code load_ec;
  ::dlerror();
  library->load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, load_ec);
  if (load_ec || !library->is_loaded()) {
    const char* detail = ::dlerror();
    problem = std::string("cannot be loaded: ") + (detail != nullptr ? detail : load_ec.message());
    return nullptr;
  }
  loaded.libraries.push_back(std::move(library));  // never unloaded
  return loaded.libraries.back().get();
}

// Notes that tsm_register runs for the file at path: false when it already
// ran for that file (by any path to it) in this process.
bool first_registration(LoadedLibraries& loaded, const std::string& path)
    TSM_REQUIRES(loaded.mutex) {
  struct stat info {};
  return ::stat(path.c_str(), &info) != 0 ||
         loaded.registered.insert({info.st_dev, info.st_ino}).second;
}

// What a call of tsm_register did, besides what it registered.
struct RegisterOutcome {
  int status = TSM_ERROR;
  bool escaped = false;  // an exception left tsm_register
  long threads_before = -1;
  long threads_after = -1;
  std::string error;  // what it wrote into its error buffer
};

RegisterOutcome call_register(RegisterFunction* register_fn, const tsm_host_api* api,
                              const std::string& path) {
  RegisterOutcome outcome;
  AbiBuffer error;
  outcome.threads_before = thread_count();
  const std::string call_text = "plugin file '" + path + "' during " TSM_REGISTER_SYMBOL;
  try {
    const PluginCallScope scope(call_text.c_str());  // named if the plugin crashes here
    outcome.status = register_fn(api, error.get());
  } catch (...) {
    outcome.escaped = true;
  }
  outcome.threads_after = thread_count();
  outcome.error = error.str();
  return outcome;
}

// Why a registration fails, or "": the outcome of the call first, then the
// names the registry rejected.
std::string registration_problem(const RegisterOutcome& outcome,
                                 const std::vector<std::string>& rejections) {
  if (outcome.escaped) return "registration failed: an exception escaped " TSM_REGISTER_SYMBOL;
  if (outcome.threads_before >= 0 && outcome.threads_after > outcome.threads_before) {
    return "started a thread during registration (" + std::to_string(outcome.threads_before) +
           " threads before " TSM_REGISTER_SYMBOL ", " + std::to_string(outcome.threads_after) +
           " after); registration must only declare factories";
  }
  if (outcome.status == TSM_UNSUPPORTED_API) {
    std::string reason = "does not support metric reporter API version " +
                         std::to_string(TSM_METRIC_REPORTER_API_VERSION);
    if (!outcome.error.empty()) reason += ": " + outcome.error;
    return reason;
  }
  if (outcome.status != TSM_OK) {
    std::string message = outcome.error;
    if (message.empty() && !rejections.empty()) message = rejections.front();
    if (message.empty()) {
      message = TSM_REGISTER_SYMBOL " returned status " + std::to_string(outcome.status) +
                " without a message";
    }
    return "registration failed: " + message;
  }
  if (!rejections.empty()) return "registration failed: " + rejections.front();
  return {};
}

// Runs the plugin's tsm_register inside a registry window, kept only when the
// registration declared its factories and nothing else: "" when kept,
// otherwise why it was rolled back.
std::string register_plugin(ReporterRegistry& registry, PluginRecord& record,
                            RegisterFunction* register_fn) {
  registry.begin(record.name, record.path);
  const RegisterOutcome outcome = call_register(register_fn, registry.host_api(), record.path);
  record.reporters = registry.attempted_names();
  record.notes = registry.registration_notes();

  std::string reason = registration_problem(outcome, registry.rejections());
  if (reason.empty()) {
    registry.commit();
  } else {
    registry.rollback();
  }
  return reason;
}

}  // namespace

const char* to_string(PluginStatus status) noexcept {
  switch (status) {
    case PluginStatus::loaded:
      return "loaded";
    case PluginStatus::disabled:
      return "disabled";
    case PluginStatus::failed:
      return "failed";
    case PluginStatus::shadowed:
      return "shadowed";
    case PluginStatus::insecure:
      return "insecure";
  }
  return "failed";
}

std::string plugin_dir_from_library(const std::string& configured) {
  if (configured.empty() || configured.front() == '/') return configured;
  const fs::path library_dir = host_image_directory();
  if (library_dir.empty()) return configured;
  return (library_dir / configured).lexically_normal().string();
}

std::string default_plugin_dir() { return plugin_dir_from_library(TSM_DEFAULT_PLUGIN_DIR); }

PluginSearchOptions PluginSearchOptions::from_environment(std::vector<std::string> plugin_dirs,
                                                          bool allow_insecure) {
  PluginSearchOptions options;
  options.plugin_dirs = std::move(plugin_dirs);
  options.plugin_path = getenv_string("TOKENSPEED_PLUGIN_PATH");
  options.disabled_plugins = getenv_string("TOKENSPEED_DISABLE_PLUGINS");
  options.default_dir = default_plugin_dir();
  options.allow_insecure = allow_insecure;
  return options;
}

std::vector<std::string> plugin_directories(const PluginSearchOptions& options) {
  std::vector<std::string> candidates;
  for (const std::string& dir : options.plugin_dirs) {
    if (!dir.empty()) candidates.push_back(dir);
  }
  for (std::string& dir : split(options.plugin_path, ':')) candidates.push_back(std::move(dir));
  if (!options.default_dir.empty()) candidates.push_back(options.default_dir);

  std::vector<std::string> result;
  std::set<std::string> seen;
  for (std::string& dir : candidates) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(fs::path(dir), ec);
    if (ec) key = fs::path(dir).lexically_normal();
    std::string key_text = key.string();
    while (key_text.size() > 1 && key_text.back() == '/') key_text.pop_back();
    if (seen.insert(key_text).second) result.push_back(std::move(dir));
  }
  return result;
}

std::string plugin_name_from_file(std::string_view file_name) {
  constexpr std::string_view suffix = ".so";
  if (file_name.size() <= suffix.size() || file_name.front() == '.') return {};
  if (file_name.substr(file_name.size() - suffix.size()) != suffix) return {};
  std::string_view name = file_name.substr(0, file_name.size() - suffix.size());
  if (name.size() > 3 && name.substr(0, 3) == "lib") name.remove_prefix(3);
  return std::string(name);
}

std::string insecure_reason(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return std::string("cannot be examined: ") + std::strerror(errno);
  }
  if (info.st_uid != 0 && info.st_uid != ::geteuid()) {
    return "is not owned by root or the current user (owner uid " + std::to_string(info.st_uid) +
           ")";
  }
  // Writable by other users: anyone, or a group that is neither root's nor
  // our own (a private group shared with nobody else is the common umask 002).
  const bool world_writable = (info.st_mode & S_IWOTH) != 0;
  const bool group_writable =
      (info.st_mode & S_IWGRP) != 0 && info.st_gid != 0 && info.st_gid != ::getegid();
  if (world_writable || group_writable) return "is writable by other users";
  return {};
}

PluginLoader::PluginLoader(ReporterRegistry& registry, WarningSink warn)
    : registry_(registry), warn_(std::move(warn)) {}

void PluginLoader::refuse(PluginRecord& record, PluginStatus status, std::string reason) {
  record.status = status;
  record.reason = std::move(reason);
  const bool quiet = status == PluginStatus::disabled || status == PluginStatus::shadowed;
  if (!quiet && warn_) warn_("plugin '" + record.path + "': " + record.reason);
}

void PluginLoader::load(const PluginSearchOptions& options) {
  directories_ = plugin_directories(options);
  const std::vector<std::string> disabled_list = split(options.disabled_plugins, ',');
  const std::set<std::string> disabled(disabled_list.begin(), disabled_list.end());
  std::map<std::string, std::string> claimed;  // plugin name -> first file

  for (const std::string& dir : directories_) {
    // A missing directory is skipped silently (the installed one often is);
    // anything else in its place is a mistake worth a line.
    if (const std::string problem = plugin_directory_problem(dir); !problem.empty()) {
      if (problem != "not found" && options.warn_unmatched_disabled && warn_)
        warn_("plugin directory '" + dir + "' " + problem + "; skipped");
      continue;
    }
    std::error_code ec;
    std::vector<std::string> files;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string file_name = it->path().filename().string();
      if (!plugin_name_from_file(file_name).empty()) files.push_back(file_name);
    }
    if (ec && warn_) warn_("plugin directory '" + dir + "' cannot be listed: " + ec.message());
    std::sort(files.begin(), files.end());
    const std::string dir_problem = options.allow_insecure ? std::string() : insecure_reason(dir);

    for (const std::string& file_name : files) {
      PluginRecord record;
      record.path = (fs::path(dir) / file_name).string();
      record.name = plugin_name_from_file(file_name);
      if (disabled.count(record.name) != 0) {
        refuse(record, PluginStatus::disabled, "disabled by TOKENSPEED_DISABLE_PLUGINS");
      } else if (auto first = claimed.find(record.name); first != claimed.end()) {
        refuse(record, PluginStatus::shadowed,
               "shadowed by '" + first->second + "' (the first directory wins)");
      } else if (!dir_problem.empty()) {
        refuse(record, PluginStatus::insecure,
               "directory '" + dir + "' " + dir_problem + kAllowHint);
      } else if (std::string file_problem = plugin_file_problem(record.path);
                 !file_problem.empty()) {
        refuse(record, PluginStatus::failed, std::move(file_problem));
      } else if (std::string file_problem =
                     options.allow_insecure ? std::string() : insecure_reason(record.path);
                 !file_problem.empty()) {
        refuse(record, PluginStatus::insecure, "file " + file_problem + kAllowHint);
      } else {
        load_file(record);
      }
      claimed.emplace(record.name, record.path);
      plugins_.push_back(std::move(record));
    }
  }
  if (options.warn_unmatched_disabled && warn_) warn_of_unmatched_disabled(disabled, claimed);
}

// A plugin that honours the variable for what it loads itself (the Python
// bridge, by entry-point name) notes each name it disabled.
bool PluginLoader::disabled_by_a_plugin(const std::string& name) const {
  const std::string quoted = "'" + name + "'";
  for (const PluginRecord& plugin : plugins_) {
    for (const std::string& note : plugin.notes) {
      if (note.find(quoted) != std::string::npos &&
          note.find("TOKENSPEED_DISABLE_PLUGINS") != std::string::npos) {
        return true;
      }
    }
  }
  return false;
}

void PluginLoader::warn_of_unmatched_disabled(
    const std::set<std::string>& disabled,
    const std::map<std::string, std::string>& claimed) const {
  std::vector<std::string> found;
  found.reserve(claimed.size());
  for (const auto& [name, path] : claimed) found.push_back(name);
  for (const std::string& name : disabled) {
    if (claimed.count(name) != 0 || disabled_by_a_plugin(name)) continue;
    std::string line = "TOKENSPEED_DISABLE_PLUGINS names '" + name +
                       "', but no plugin file of that name is in the plugin directories "
                       "(a plugin's name is its file name without 'lib' and '.so')";
    if (const std::string suggestion = closest_name(name, found); !suggestion.empty())
      line += "; did you mean '" + suggestion + "'?";
    warn_(line);
  }
}

const PluginRecord& PluginLoader::load_one(const std::string& path, bool allow_insecure) {
  PluginRecord record;
  record.path = path;
  record.name = plugin_name_from_file(fs::path(path).filename().string());
  if (record.name.empty()) {
    refuse(record, PluginStatus::failed, "is not a plugin file (a file name ending in .so)");
  } else if (std::string file_problem = plugin_file_problem(path); !file_problem.empty()) {
    refuse(record, PluginStatus::failed, std::move(file_problem));
  } else if (std::string insecure = allow_insecure ? std::string() : insecure_reason(path);
             !insecure.empty()) {
    refuse(record, PluginStatus::insecure, "file " + insecure + kAllowHint);
  } else {
    load_file(record);
  }
  plugins_.push_back(std::move(record));
  return plugins_.back();
}

void PluginLoader::load_file(PluginRecord& record) {
  LoadedLibraries& loaded = loaded_libraries();
  MutexLock lock(loaded.mutex);

  if (std::string problem = elf_problem(record.path); !problem.empty()) {
    refuse(record, PluginStatus::failed, std::move(problem));
    return;
  }
  std::string problem;
  boost::dll::shared_library* library = load_for_good(loaded, record.path, problem);
  if (library == nullptr) {
    refuse(record, PluginStatus::failed, std::move(problem));
    return;
  }
  if (!library->has(TSM_REGISTER_SYMBOL)) {
    refuse(record, PluginStatus::failed, "does not export " TSM_REGISTER_SYMBOL);
    return;
  }
  auto* register_fn = library->get<RegisterFunction>(TSM_REGISTER_SYMBOL);
  if (!first_registration(loaded, record.path)) {
    refuse(record, PluginStatus::failed,
           "registration failed: tsm_register already ran in this process for this file");
    return;
  }
  if (std::string reason = register_plugin(registry_, record, register_fn); !reason.empty()) {
    refuse(record, PluginStatus::failed, std::move(reason));
    return;
  }
  record.status = PluginStatus::loaded;
  record.reason.clear();
}

std::string PluginLoader::unavailable_reason(std::string_view reporter_name) const {
  std::string explanation;
  for (const PluginRecord& record : plugins_) {
    if (record.status == PluginStatus::loaded) continue;
    const bool tried = std::find(record.reporters.begin(), record.reporters.end(), reporter_name) !=
                       record.reporters.end();
    if (!tried && record.name != reporter_name) continue;
    if (!explanation.empty()) explanation += "; ";
    explanation +=
        "plugin '" + record.path + "' is " + to_string(record.status) + ": " + record.reason;
  }
  for (const PluginRecord& record : plugins_) {
    for (const std::string& note : record.notes) {
      if (!explanation.empty()) explanation += "; ";
      explanation += "plugin '" + record.path + "' logged while registering: " + note;
    }
  }
  return explanation;
}

}  // namespace tokenspeed::metrics
