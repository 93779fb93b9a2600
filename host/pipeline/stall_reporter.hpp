// stall_reporter.hpp — the rate-limited drop and stall lines of a process's
// outputs, written from a thread of its own that no plugin can hold: it reads
// the delivery threads' counters and call probes (atomics only) and never calls a
// plugin, takes a delivery thread's lock or touches the event channel.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/fault_log.hpp"
#include "core/thread_safety.hpp"
#include "pipeline/sink_delivery.hpp"

namespace tokenspeed::metrics {

struct StallReporterOptions {
  std::string process_name;                         // "scheduler-0"; "" leaves it out
  std::chrono::milliseconds check_interval{1000};   // how often the counters are read
  std::chrono::milliseconds stall_threshold{1000};  // a plugin call this long is stuck
  std::chrono::milliseconds line_interval{10'000};  // at most one line per output per interval
  LogWriter log;                                    // stderr when empty
};

// "41,424": a count with thousands separators.
std::string format_count(std::uint64_t count);

// Per output, at most one line per line_interval (the first at once), e.g.
//   tokenspeed-metrics: output 'x' in scheduler-0: 41,424 events dropped
//   (ring full) in the last 10 s; emit has not returned for 12 s
// with the drops since the previous line, and the plugin call that has been
// running for at least stall_threshold, if any. Drops seen while a call is
// running wait (at most stall_threshold) for the call to return or to count
// as stuck, so that a stuck call and the drops it causes share one line.
//
// Threading: start() and stop() from one control thread; check() runs on
// the reporter's thread (or on the test's thread when start() was not
// called). Reads delivery threads only through their atomic counters.
class StallReporter {
 public:
  using Clock = std::chrono::steady_clock;

  StallReporter(std::vector<std::shared_ptr<SinkDelivery>> deliveries,
                StallReporterOptions options);
  ~StallReporter();  // stop()
  StallReporter(const StallReporter&) = delete;
  StallReporter& operator=(const StallReporter&) = delete;

  void start();
  // Ends the thread, then writes each output's drops not reported yet, so
  // that the lines add up to the totals. Idempotent.
  void stop() noexcept;

  // One look at every output at now; writes the lines that are due.
  void check(Clock::time_point now) noexcept;

 private:
  struct Watched {
    std::shared_ptr<SinkDelivery> delivery;
    std::uint64_t reported_ring_full = 0;
    std::uint64_t reported_sink_disabled = 0;
    Clock::time_point window_start;  // the last line, or the last check with nothing pending
    std::optional<Clock::time_point> last_line;
    std::uint64_t call_sequence = 0;  // the call seen running at the last check
    std::optional<Clock::time_point> call_seen_since;
    std::optional<Clock::time_point> drops_pending_since;  // unreported drops first seen
  };

  void run() noexcept;
  void write_line(Watched& output, Clock::time_point now, std::uint64_t full,
                  std::uint64_t disabled, const std::string& stall) noexcept;

  StallReporterOptions options_;
  std::vector<Watched> outputs_;
  std::thread thread_;
  Mutex mutex_;
  CondVar cv_;
  bool stopping_ TSM_GUARDED_BY(mutex_) = false;
  bool stopped_ TSM_GUARDED_BY(mutex_) = false;
};

}  // namespace tokenspeed::metrics
