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
  if (options.warn_unmatched_disabled && warn_) {
    std::vector<std::string> found;
    found.reserve(claimed.size());
    for (const auto& [name, path] : claimed) found.push_back(name);
    // A plugin that honours the variable for what it loads itself (the
    // Python bridge, by entry-point name) notes each name it disabled.
    auto disabled_by_a_plugin = [this](const std::string& name) {
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
    };
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

  // Checked before dlopen: glibc reports a library of another architecture
  // as "No such file or directory", and a file swapped for a FIFO would block.
  try {
    const FileHandle file = open_regular_file(record.path);
    if (std::string problem = elf_compatibility_problem(file.get()); !problem.empty()) {
      refuse(record, PluginStatus::failed, std::move(problem));
      return;
    }
  } catch (const FileReadError& error) {
    refuse(record, PluginStatus::failed, error.what());
    return;
  }

  auto library = std::make_unique<boost::dll::shared_library>();
  boost::dll::fs::error_code load_ec;
  ::dlerror();
  library->load(record.path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local,
                load_ec);
  if (load_ec || !library->is_loaded()) {
    const char* detail = ::dlerror();
    refuse(record, PluginStatus::failed,
           std::string("cannot be loaded: ") + (detail != nullptr ? detail : load_ec.message()));
    return;
  }
  boost::dll::shared_library* lib = library.get();
  loaded.libraries.push_back(std::move(library));  // never unloaded

  if (!lib->has(TSM_REGISTER_SYMBOL)) {
    refuse(record, PluginStatus::failed, "does not export " TSM_REGISTER_SYMBOL);
    return;
  }
  auto* register_fn = lib->get<int(const tsm_host_api*, tsm_buffer*)>(TSM_REGISTER_SYMBOL);

  struct stat info {};
  if (::stat(record.path.c_str(), &info) == 0 &&
      !loaded.registered.insert({info.st_dev, info.st_ino}).second) {
    refuse(record, PluginStatus::failed,
           "registration failed: tsm_register already ran in this process for this file");
    return;
  }

  registry_.begin(record.name, record.path);
  AbiBuffer error;
  int status = TSM_ERROR;
  bool escaped = false;
  const long threads_before = thread_count();
  const std::string call_text = "plugin file '" + record.path + "' during " TSM_REGISTER_SYMBOL;
  try {
    const PluginCallScope scope(call_text.c_str());  // named if the plugin crashes here
    status = register_fn(registry_.host_api(), error.get());
  } catch (...) {
    escaped = true;
  }
  const long threads_after = thread_count();
  record.reporters = registry_.attempted_names();
  record.notes = registry_.registration_notes();

  std::string reason;
  if (escaped) {
    reason = "registration failed: an exception escaped " TSM_REGISTER_SYMBOL;
  } else if (threads_before >= 0 && threads_after > threads_before) {
    reason = "started a thread during registration (" + std::to_string(threads_before) +
             " threads before " TSM_REGISTER_SYMBOL ", " + std::to_string(threads_after) +
             " after); registration must only declare factories";
  } else if (status == TSM_UNSUPPORTED_API) {
    reason = "does not support metric reporter API version " +
             std::to_string(TSM_METRIC_REPORTER_API_VERSION);
    if (!error.empty()) reason += ": " + error.str();
  } else if (status != TSM_OK) {
    std::string message = error.str();
    if (message.empty() && !registry_.rejections().empty())
      message = registry_.rejections().front();
    if (message.empty()) {
      message =
          TSM_REGISTER_SYMBOL " returned status " + std::to_string(status) + " without a message";
    }
    reason = "registration failed: " + message;
  } else if (!registry_.rejections().empty()) {
    reason = "registration failed: " + registry_.rejections().front();
  }

  if (!reason.empty()) {
    registry_.rollback();
    refuse(record, PluginStatus::failed, std::move(reason));
    return;
  }
  registry_.commit();
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
