// isolation_settings.hpp — the host's own keys in an output's settings:
// "isolation" ("none" or "process") and "isolation_deadlock_timeout_ms". They
// are taken out before the plugin's validate sees the settings, checked here,
// and cross to producers in the handoff. Startup only; never starts a helper.
#pragma once

#include <chrono>
#include <string>

#include <boost/json/object.hpp>

namespace tokenspeed::metrics {

inline constexpr const char* kIsolationKey = "isolation";
inline constexpr const char* kIsolationDeadlockTimeoutKey = "isolation_deadlock_timeout_ms";

struct IsolationSettings {
  // true: the output's sink runs in a helper process ("isolation": "process").
  bool process = false;
  // A helper that makes no progress for this long while events wait (or
  // that is still starting) is killed and restarted.
  std::chrono::milliseconds deadlock_timeout{10'000};

  // {"mode": "process"|"none", "deadlock_timeout_ms": n}, for the handoff.
  boost::json::object to_json() const;
  // The inverse; throws std::invalid_argument on a malformed object.
  static IsolationSettings from_json(const boost::json::object& json);
};

// Removes the host's keys from config and returns what they say. Throws
// StartupError naming reporter, file and key when "isolation" is not one of
// the strings "process" and "none", or the timeout is not an integer in
// [100, 3600000] or is given without "isolation": "process".
IsolationSettings take_isolation_settings(boost::json::object& config, const std::string& reporter,
                                          const std::string& file);

}  // namespace tokenspeed::metrics
