/*
 * tokenspeed/kit/rate_limited_log.hpp — a plugin's runtime faults, written
 * through host->log at most once per interval per topic with the count since
 * the last line (the first occurrence at once), like collectd's c_complain.
 * Never reports through the metric channel; never called from emit's
 * per-event path (count there, report from the delivery thread).
 */
#ifndef TOKENSPEED_KIT_RATE_LIMITED_LOG_HPP
#define TOKENSPEED_KIT_RATE_LIMITED_LOG_HPP

#include <tokenspeed/metric_reporter.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace tokenspeed::metrics::kit {

/* Threading: report may be called from any thread; it takes a mutex and
 * calls host.log outside it. */
class RateLimitedLog {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimitedLog(const plugin::Host& host, std::chrono::nanoseconds interval) noexcept
      : host_(host), interval_(interval) {}

  /* Logs message under topic now if the topic has not been logged within the
   * interval (appending how many were suppressed since), else counts it.
   * Returns true when a line was written. */
  bool report(tsm_log_level level, const std::string& topic, const std::string& message,
              Clock::time_point now = Clock::now()) noexcept {
    std::string line;
    try {
      std::lock_guard lock(mutex_);
      Topic& state = topics_[topic];
      if (state.logged && now - state.last < interval_) {
        ++state.suppressed;
        return false;
      }
      line = message;
      if (state.suppressed > 0) {
        line += " (" + std::to_string(state.suppressed) + " more since the last report)";
      }
      state.logged = true;
      state.last = now;
      state.suppressed = 0;
    } catch (...) {  // out of memory: the log is the channel that would have said so
      return false;
    }
    host_.log(level, line);
    return true;
  }

  /* Logs whatever is still suppressed, one line per topic (at close). */
  void flush(tsm_log_level level, const std::string& what) noexcept {
    try {
      std::map<std::string, uint64_t> pending;
      {
        std::lock_guard lock(mutex_);
        for (auto& [topic, state] : topics_) {
          if (state.suppressed > 0) pending[topic] = state.suppressed;
          state.suppressed = 0;
        }
      }
      for (const auto& [topic, count] : pending) {
        std::string line = what;
        line += ": ";
        line += std::to_string(count);
        line += " more '";
        line += topic;
        line += "' since the last report";
        host_.log(level, line);
      }
    } catch (...) {  // out of memory at close: the counts cannot be written anywhere else
    }
  }

 private:
  struct Topic {
    bool logged = false;
    Clock::time_point last{};
    uint64_t suppressed = 0;
  };
  const plugin::Host host_;
  const std::chrono::nanoseconds interval_;
  std::mutex mutex_;
  std::map<std::string, Topic> topics_;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_RATE_LIMITED_LOG_HPP
