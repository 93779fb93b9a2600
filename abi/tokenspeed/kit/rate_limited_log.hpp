/*
 * tokenspeed/kit/rate_limited_log.hpp — a plugin's runtime faults, written
 * through host->log at most once per interval per topic with the count since
 * the last line (the first occurrence at once), like collectd's c_complain.
 * A report may be about many events (a dropped request of 500 samples): the
 * lines then also say how many events the suppressed reports were about.
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
#include <vector>

namespace tokenspeed::metrics::kit {

/* Threading: report may be called from any thread; it takes a mutex and
 * calls host.log outside it. */
class RateLimitedLog {
 public:
  using Clock = std::chrono::steady_clock;

  RateLimitedLog(const plugin::Host& host, std::chrono::nanoseconds interval) noexcept
      : host_(host), interval_(interval) {}

  /* Logs message under topic now if the topic has not been logged within the
   * interval (appending what was suppressed since), else counts it. Returns
   * true when a line was written. */
  bool report(tsm_log_level level, const std::string& topic, const std::string& message,
              Clock::time_point now = Clock::now()) noexcept {
    return report(level, topic, message, 1, now);
  }

  /* The same for a message about events events (a dropped request's data
   * points, refused events): a suppressed report adds its events to the
   * topic's count, and the next line says "(N events in M more reports since
   * the last line)". While every report of a topic is about one event the
   * two counts agree and the line keeps the short form "(M more since the
   * last report)". */
  bool report(tsm_log_level level, const std::string& topic, const std::string& message,
              uint64_t events, Clock::time_point now = Clock::now()) noexcept {
    std::string line;
    try {
      std::lock_guard lock(mutex_);
      Topic& state = topics_[topic];
      if (state.logged && now - state.last < interval_) {
        ++state.suppressed;
        state.suppressed_events += events;
        return false;
      }
      line = message;
      if (state.suppressed > 0) line += " (" + suppressed_text(state, "") + ")";
      state.logged = true;
      state.last = now;
      state.suppressed = 0;
      state.suppressed_events = 0;
    } catch (...) {  // out of memory: the log is the channel that would have said so
      return false;
    }
    host_.log(level, line);
    return true;
  }

  /* Logs whatever is still suppressed, one line per topic (at close). */
  void flush(tsm_log_level level, const std::string& what) noexcept {
    try {
      std::vector<std::string> lines;
      {
        std::lock_guard lock(mutex_);
        for (auto& [topic, state] : topics_) {
          if (state.suppressed > 0) lines.push_back(what + ": " + suppressed_text(state, topic));
          state.suppressed = 0;
          state.suppressed_events = 0;
        }
      }
      for (const std::string& line : lines) host_.log(level, line);
    } catch (...) {  // out of memory at close: the counts cannot be written anywhere else
    }
  }

 private:
  struct Topic {
    bool logged = false;
    Clock::time_point last{};
    uint64_t suppressed = 0;         // reports since the last line
    uint64_t suppressed_events = 0;  // the events those reports were about
  };

  /* What state has suppressed, topic named when not empty:
   * "2 more 'topic' since the last report" (one event per report), or
   * "1188 events in 37 more 'topic' reports since the last line". */
  static std::string suppressed_text(const Topic& state, const std::string& topic) {
    const std::string named = topic.empty() ? std::string() : "'" + topic + "' ";
    if (state.suppressed_events == state.suppressed)
      return std::to_string(state.suppressed) + " more " + named + "since the last report";
    return std::to_string(state.suppressed_events) +
           (state.suppressed_events == 1 ? " event in " : " events in ") +
           std::to_string(state.suppressed) + " more " + named +
           (state.suppressed == 1 ? "report" : "reports") + " since the last line";
  }
  const plugin::Host host_;
  const std::chrono::nanoseconds interval_;
  std::mutex mutex_;
  std::map<std::string, Topic> topics_;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_RATE_LIMITED_LOG_HPP
