// fault_log.hpp — the host's own lines about runtime faults, c_complain-style:
// the first at once, then at most one per interval carrying the counts of
// every problem since. Never writes through a plugin's event channel, never
// on the hot path. (A plugin's rate-limited lines are the kit's
// kit::RateLimitedLog, per topic through host->log: the host has no host->log
// to call and sums several problems into one line, so it has this instead.)
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tokenspeed::metrics {

// Receives one complete line (no trailing newline). Must not call back into
// the metrics pipeline.
using LogWriter = std::function<void(std::string_view line)>;

// The default writer: the line and a newline on stderr, in one write.
void write_log_line_to_stderr(std::string_view line) noexcept;

// Threading: one thread at a time (a sink's delivery thread, or close()).
class FaultLog {
 public:
  using Clock = std::chrono::steady_clock;

  // subject names the source ("output 'otlp'"); lines read
  // "tokenspeed-metrics: <subject>: <what> <count> ...".
  FaultLog(std::string subject, std::chrono::nanoseconds interval, LogWriter writer);

  // Records count new occurrences of the problem `what` ("events dropped:
  // queue full") at now. Writes a line when this is the first occurrence of
  // any problem, or when at least one interval passed since the last line;
  // the line carries every problem's count since the last line.
  void report(std::string_view what, std::uint64_t count, Clock::time_point now);

  // A one-off message (for example "create_sink failed: ..."): written when
  // the interval allows, otherwise counted and summarized with the next line.
  void message(std::string_view text, Clock::time_point now);

  // Writes what is pending, if anything, regardless of the interval (close).
  void flush(Clock::time_point now);

 private:
  bool due(Clock::time_point now) const noexcept;
  void write_pending(Clock::time_point now);

  std::string subject_;
  std::chrono::nanoseconds interval_;
  LogWriter writer_;
  bool written_once_ = false;
  Clock::time_point last_line_{};
  struct Pending {
    std::string what;
    std::uint64_t count;
  };
  std::vector<Pending> pending_;
  std::uint64_t suppressed_messages_ = 0;
};

}  // namespace tokenspeed::metrics
