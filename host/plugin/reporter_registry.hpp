// reporter_registry.hpp — the table of output names declared by plugins:
// unique names, override, the reserved name "prometheus", and per-plugin
// begin/commit/rollback. Startup only; never touched on the hot path.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "core/thread_safety.hpp"
#include "plugin/reporter.hpp"

namespace tokenspeed::metrics {

// The name of the built-in output; no plugin may register it.
inline constexpr std::string_view kPrometheusReporterName = "prometheus";

// True for 1-64 characters of [a-z0-9_.-].
bool is_valid_reporter_name(std::string_view name) noexcept;

// Threading: used from the startup thread only (plugins register from inside
// tsm_register, which the loader calls on that thread). Reporter pointers
// returned by find() stay valid for the life of the registry, even after a
// name is overridden or rolled back.
class ReporterRegistry {
 public:
  ReporterRegistry();
  ~ReporterRegistry();
  ReporterRegistry(const ReporterRegistry&) = delete;
  ReporterRegistry& operator=(const ReporterRegistry&) = delete;

  // Opens the registration window of one plugin file. Registrations are
  // accepted only while a window is open.
  void begin(std::string plugin_name, std::string plugin_path);
  // Closes the window, keeping what it registered.
  void commit();
  // Closes the window, removing every name it registered and restoring the
  // names it overrode.
  void rollback();
  bool in_registration() const noexcept { return open_; }

  // Registers one reporter. Returns "" on success, or the reason it was
  // rejected (invalid name, reserved, already registered without override,
  // missing validate or create_sink, no registration window open). Every
  // rejection inside a window is also remembered in rejections().
  std::string add(const tsm_reporter_descriptor* descriptor);

  // The lines the plugin of the current (or last) window logged through
  // host->log while its tsm_register ran, debug lines included: they explain
  // an unknown reporter (a bridge plugin names what it could not load there).
  std::vector<std::string> registration_notes() const;

  // Names attempted in the current (or last) window, accepted or not.
  const std::vector<std::string>& attempted_names() const noexcept { return attempted_; }
  // Rejection messages of the current (or last) window.
  const std::vector<std::string>& rejections() const noexcept { return rejections_; }

  // The reporter that currently owns name, or nullptr.
  const Reporter* find(std::string_view name) const;
  // The reporters a plugin file registered and kept, in registration order,
  // including names a later plugin overrode.
  std::vector<const Reporter*> registered_by(std::string_view plugin_path) const;
  // Every registered name, sorted.
  std::vector<std::string> names() const;

  // The host-API table to hand to the tsm_register of the plugin whose window
  // is open (nullptr when none is). Each plugin gets its own table, tagged
  // with its name for log lines; every table stays valid for the life of the
  // process (log keeps working from any thread after the registry is gone),
  // so that a plugin calling it late is rejected, not undefined.
  const tsm_host_api* host_api() const noexcept;

 private:
  struct PluginContext {
    ReporterRegistry* registry;
    std::string plugin_name;
    tsm_host_api api;
    std::atomic<bool> recording{false};  // true while its tsm_register runs
    mutable Mutex notes_mutex;           // log may be called from any thread
    std::vector<std::string> notes TSM_GUARDED_BY(notes_mutex);
  };

  static int register_trampoline(void* host_data, const tsm_reporter_descriptor* descriptor,
                                 tsm_buffer* error) noexcept;
  static void log_trampoline(void* host_data, uint32_t level, const char* message) noexcept;

  struct JournalEntry {
    std::string name;
    const Reporter* previous;  // nullptr when the name was new
    Reporter* added;
  };

  // A new table, owned by the process (never freed: a plugin may keep the
  // table and call log for the life of the process).
  static PluginContext* new_host_table();

  // This registry's tables, one per registration window.
  std::vector<PluginContext*> contexts_;
  bool open_ = false;
  std::string plugin_name_;
  std::string plugin_path_;
  std::vector<JournalEntry> journal_;
  std::vector<std::string> attempted_;
  std::vector<std::string> rejections_;
  std::map<std::string, const Reporter*, std::less<>> by_name_;
  std::vector<std::unique_ptr<Reporter>> all_;  // owns every reporter ever accepted
};

}  // namespace tokenspeed::metrics
