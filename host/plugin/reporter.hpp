// reporter.hpp — one registered output: the host's copy of a plugin's
// reporter descriptor and the plugin file it came from, with C++ calls into
// validate / create_sink / start_node. No plugin failure ever escapes as
// anything but an error result.
#pragma once

#include <chrono>
#include <string>

#include <boost/json/object.hpp>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics {

// The outcome of create_sink: ok with a sink, or an error message.
struct CreateSinkResult {
  bool ok = false;
  tsm_sink sink{};
  std::string error;
};

// The outcome of start_node: ok with a session and the copied producer
// configuration, or an error message.
struct StartNodeResult {
  bool ok = false;
  tsm_node_session session{};
  boost::json::object producer_config;
  std::string error;
};

// Threading: immutable after construction. The plugin functions of one
// reporter are never called concurrently; callers serialize them.
class Reporter {
 public:
  // Copies the descriptor (at most sizeof(tsm_reporter_descriptor) bytes of
  // it, as its struct_size says), its name and, each only when struct_size
  // covers it, its version string and its settings description.
  Reporter(const tsm_reporter_descriptor& descriptor, std::string plugin_name,
           std::string plugin_path);
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  const std::string& name() const noexcept { return name_; }
  const std::string& plugin_name() const noexcept { return plugin_name_; }
  const std::string& plugin_path() const noexcept { return plugin_path_; }
  bool has_start_node() const noexcept { return descriptor_.start_node != nullptr; }
  bool override_flag() const noexcept { return descriptor_.override != 0; }
  // The plugin's version string ("" when its descriptor has none, or was
  // built before the field was appended).
  const std::string& version() const noexcept { return version_; }
  const tsm_reporter_descriptor& descriptor() const noexcept { return descriptor_; }
  // The settings description the plugin declared (a JSON array as text), or
  // "" when its descriptor has none.
  const std::string& settings_description() const noexcept { return settings_; }
  // True once the registry rolled back the plugin registration that made it.
  bool rolled_back() const noexcept { return rolled_back_; }
  void mark_rolled_back() noexcept { rolled_back_ = true; }

  // Calls validate with the settings and returns the normalized JSON object
  // (the settings themselves when the plugin leaves the buffer empty).
  // Throws StartupError naming this reporter (and config_file when not empty)
  // when the plugin rejects the settings or returns something that is not a
  // JSON object. Creates no resources.
  boost::json::object validate(const boost::json::object& config,
                               const std::string& config_file = {}) const;

  // Creates one process-local sink from the producer configuration.
  // prepared carries the host's fields the plugin reads (its process and
  // figures callback, set by prepare_sink); left empty, the sink has none.
  CreateSinkResult create_sink(const boost::json::object& producer_config,
                               tsm_sink prepared = {}) const noexcept;

  // Runs start_node with the normalized configuration. A session that was
  // returned together with an unusable producer configuration is closed
  // within cleanup_timeout before the error is returned.
  StartNodeResult start_node(const boost::json::object& config,
                             std::chrono::nanoseconds cleanup_timeout) const noexcept;

 private:
  // "output 'x' (plugin file '/p/x.so') during validate", for crash lines.
  std::string call_text(const char* function) const;

  tsm_reporter_descriptor descriptor_{};
  std::string name_;
  std::string version_;
  std::string plugin_name_;
  std::string plugin_path_;
  std::string settings_;
  bool rolled_back_ = false;
};

}  // namespace tokenspeed::metrics
