// isolation_settings.cpp — parsing and checking the host's isolation keys of
// an output's settings. Startup only.
#include "config/isolation_settings.hpp"

#include <stdexcept>

#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

constexpr std::int64_t kMinDeadlockTimeoutMs = 100;
constexpr std::int64_t kMaxDeadlockTimeoutMs = 3'600'000;

}  // namespace

boost::json::object IsolationSettings::to_json() const {
  return boost::json::object{{"mode", process ? "process" : "none"},
                             {"deadlock_timeout_ms", deadlock_timeout.count()}};
}

IsolationSettings IsolationSettings::from_json(const boost::json::object& json) {
  IsolationSettings settings;
  const boost::json::value* mode = json.if_contains("mode");
  if (mode == nullptr || !mode->is_string() ||
      (mode->get_string() != "process" && mode->get_string() != "none")) {
    throw std::invalid_argument("isolation.mode must be \"process\" or \"none\"");
  }
  settings.process = mode->get_string() == "process";
  const boost::json::value* timeout = json.if_contains("deadlock_timeout_ms");
  if (timeout == nullptr || !timeout->is_int64()) {
    throw std::invalid_argument("isolation.deadlock_timeout_ms must be an integer");
  }
  settings.deadlock_timeout = std::chrono::milliseconds(timeout->get_int64());
  return settings;
}

IsolationSettings take_isolation_settings(boost::json::object& config, const std::string& reporter,
                                          const std::string& file) {
  IsolationSettings settings;
  const std::string key_prefix = reporter + ".";
  if (const boost::json::value* mode = config.if_contains(kIsolationKey); mode != nullptr) {
    const StartupErrorContext where{reporter, file, key_prefix + kIsolationKey};
    if (!mode->is_string()) {
      throw StartupError(where,
                         "must be a string: \"process\" (run the output's sink in a helper "
                         "process) or \"none\"");
    }
    if (mode->get_string() != "process" && mode->get_string() != "none") {
      throw StartupError(where, "unknown isolation '" + std::string(mode->get_string()) +
                                    "' (expected \"process\" or \"none\")");
    }
    settings.process = mode->get_string() == "process";
    config.erase(kIsolationKey);
  }
  if (const boost::json::value* timeout = config.if_contains(kIsolationDeadlockTimeoutKey);
      timeout != nullptr) {
    const StartupErrorContext where{reporter, file, key_prefix + kIsolationDeadlockTimeoutKey};
    if (!settings.process) {
      throw StartupError(where, "applies only with \"isolation\": \"process\"");
    }
    const bool integer = timeout->is_int64() || timeout->is_uint64();
    const std::int64_t ms = timeout->is_int64() ? timeout->get_int64()
                            : timeout->is_uint64() && timeout->get_uint64() <= kMaxDeadlockTimeoutMs
                                ? static_cast<std::int64_t>(timeout->get_uint64())
                                : kMaxDeadlockTimeoutMs + 1;
    if (!integer || ms < kMinDeadlockTimeoutMs || ms > kMaxDeadlockTimeoutMs) {
      throw StartupError(where, "must be an integer number of milliseconds from " +
                                    std::to_string(kMinDeadlockTimeoutMs) + " to " +
                                    std::to_string(kMaxDeadlockTimeoutMs));
    }
    settings.deadlock_timeout = std::chrono::milliseconds(ms);
    config.erase(kIsolationDeadlockTimeoutKey);
  }
  return settings;
}

}  // namespace tokenspeed::metrics
