// reporter_registry.cpp — accepts or rejects each register_metric_reporter
// call and journals it so that a failed plugin can be rolled back. Never
// calls into a plugin.
#include "plugin/reporter_registry.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>

#include "core/abi_buffer.hpp"
#include "core/host_version.hpp"
#include "core/process_identity.hpp"
#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {
namespace {

// The descriptor fields of API version 1, up to and including user_data.
constexpr std::size_t kMinDescriptorSize =
    offsetof(tsm_reporter_descriptor, user_data) + sizeof(void*);

}  // namespace

bool is_valid_reporter_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

ReporterRegistry::ReporterRegistry() = default;

ReporterRegistry::~ReporterRegistry() {
  // The tables outlive the registry; a late registration must find it gone.
  for (PluginContext* context : contexts_) context->registry = nullptr;
}

const tsm_host_api* ReporterRegistry::host_api() const noexcept {
  if (!open_ || contexts_.empty()) return nullptr;
  return &contexts_.back()->api;
}

ReporterRegistry::PluginContext* ReporterRegistry::new_host_table() {
  // Every host table ever handed to a plugin lives as long as the process: a
  // plugin may keep the table and call log (or, wrongly, register) at any
  // time. They are held here, reachable, never freed.
  static Mutex mutex;
  static auto* tables TSM_PT_GUARDED_BY(mutex) = new std::vector<std::unique_ptr<PluginContext>>();
  MutexLock lock(mutex);
  return tables->emplace_back(std::make_unique<PluginContext>()).get();
}

void ReporterRegistry::begin(std::string plugin_name, std::string plugin_path) {
  PluginContext* context = new_host_table();
  context->registry = this;
  context->plugin_name = plugin_name;
  context->api.struct_size = sizeof(tsm_host_api);
  context->api.api_version = TSM_METRIC_REPORTER_API_VERSION;
  context->api.host_data = context;
  context->api.host_version = host_version();
  context->api.register_metric_reporter = &ReporterRegistry::register_trampoline;
  context->api.log = &ReporterRegistry::log_trampoline;
  context->recording = true;
  contexts_.push_back(context);
  open_ = true;
  plugin_name_ = std::move(plugin_name);
  plugin_path_ = std::move(plugin_path);
  journal_.clear();
  attempted_.clear();
  rejections_.clear();
}

std::vector<std::string> ReporterRegistry::registration_notes() const {
  if (contexts_.empty()) return {};
  const PluginContext* context = contexts_.back();
  MutexLock lock(context->notes_mutex);
  return context->notes;
}

void ReporterRegistry::commit() {
  if (!contexts_.empty()) contexts_.back()->recording = false;
  open_ = false;
  journal_.clear();
}

void ReporterRegistry::rollback() {
  if (!contexts_.empty()) contexts_.back()->recording = false;
  open_ = false;
  for (auto entry = journal_.rbegin(); entry != journal_.rend(); ++entry) {
    entry->added->mark_rolled_back();
    if (entry->previous == nullptr) {
      by_name_.erase(entry->name);
    } else {
      by_name_[entry->name] = entry->previous;
    }
  }
  journal_.clear();
}

std::string ReporterRegistry::add(const tsm_reporter_descriptor* descriptor) {
  auto reject = [this](std::string message) {
    if (open_) rejections_.push_back(message);
    return message;
  };
  if (!open_) {
    return "register_metric_reporter called after tsm_register returned: rejected";
  }
  if (descriptor == nullptr)
    return reject("register_metric_reporter called with a NULL descriptor");
  if (descriptor->struct_size < kMinDescriptorSize) {
    return reject("reporter descriptor struct_size " + std::to_string(descriptor->struct_size) +
                  " is smaller than the " + std::to_string(kMinDescriptorSize) +
                  " bytes of API version 1");
  }
  std::string name;
  if (descriptor->name != nullptr) name.assign(descriptor->name, strnlen(descriptor->name, 65));
  attempted_.push_back(name);
  if (!is_valid_reporter_name(name)) {
    return reject("invalid reporter name '" + name + "': a name is 1-64 characters of [a-z0-9_.-]");
  }
  if (name == kPrometheusReporterName) {
    return reject("reporter name 'prometheus' is reserved for the built-in output");
  }
  if (descriptor->validate == nullptr) {
    return reject("reporter '" + name + "' has no validate function");
  }
  if (descriptor->create_sink == nullptr) {
    return reject("reporter '" + name + "' has no create_sink function");
  }
  const auto existing = by_name_.find(name);
  const Reporter* previous = existing == by_name_.end() ? nullptr : existing->second;
  if (previous != nullptr && descriptor->override == 0) {
    return reject("reporter name '" + name + "' is already registered by plugin '" +
                  previous->plugin_path() + "' (set override to replace it)");
  }
  all_.push_back(std::make_unique<Reporter>(*descriptor, plugin_name_, plugin_path_));
  by_name_[name] = all_.back().get();
  journal_.push_back(JournalEntry{name, previous, all_.back().get()});
  return {};
}

const Reporter* ReporterRegistry::find(std::string_view name) const {
  const auto found = by_name_.find(name);
  return found == by_name_.end() ? nullptr : found->second;
}

std::vector<const Reporter*> ReporterRegistry::registered_by(std::string_view plugin_path) const {
  std::vector<const Reporter*> result;
  for (const auto& reporter : all_) {
    if (reporter->plugin_path() == plugin_path && !reporter->rolled_back()) {
      result.push_back(reporter.get());
    }
  }
  return result;
}

std::vector<std::string> ReporterRegistry::names() const {
  std::vector<std::string> result;
  result.reserve(by_name_.size());
  for (const auto& [name, reporter] : by_name_) result.push_back(name);
  return result;
}

int ReporterRegistry::register_trampoline(void* host_data,
                                          const tsm_reporter_descriptor* descriptor,
                                          tsm_buffer* error) noexcept {
  std::string message;
  try {
    const auto* context = static_cast<const PluginContext*>(host_data);
    if (context == nullptr) {
      message = "register_metric_reporter called without host_data";
    } else if (context->registry == nullptr || !context->registry->open_ ||
               context->registry->contexts_.back() != context) {
      message = "register_metric_reporter called after tsm_register returned: rejected";
    } else {
      message = context->registry->add(descriptor);
    }
  } catch (const std::exception& failure) {
    message = std::string("register_metric_reporter failed: ") + failure.what();
  } catch (...) {
    message = "register_metric_reporter failed";
  }
  if (message.empty()) return TSM_OK;
  if (error != nullptr && error->assign != nullptr)
    error->assign(error, message.data(), message.size());
  return TSM_ERROR;
}

void ReporterRegistry::log_trampoline(void* host_data, uint32_t level,
                                      const char* message) noexcept {
  auto* context = static_cast<PluginContext*>(host_data);
  if (context != nullptr && context->recording && message != nullptr) {
    try {
      MutexLock lock(context->notes_mutex);
      context->notes.emplace_back(message);
    } catch (...) {  // a note is an explanation only; losing it is harmless
    }
  }
  if (level < TSM_LOG_INFO) return;  // plugin debug lines are not shown
  const char* severity = level >= TSM_LOG_ERROR     ? "error"
                         : level >= TSM_LOG_WARNING ? "warning"
                                                    : "info";
  // Which process wrote it: every producer runs the same plugin.
  const char* process = log_process_name();
  std::fprintf(stderr, "tokenspeed-metrics: %s: %s%splugin '%s': %s\n", severity, process,
               process[0] != '\0' ? ": " : "",
               context == nullptr ? "?" : context->plugin_name.c_str(),
               message == nullptr ? "" : message);
}

}  // namespace tokenspeed::metrics
