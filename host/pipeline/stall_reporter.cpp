// stall_reporter.cpp — one thread per process reading the delivery threads' drop
// counters and call probes once per check interval and writing the
// rate-limited lines. Allocates only when it writes a line.
#include "pipeline/stall_reporter.hpp"

#include <cstdio>

namespace tokenspeed::metrics {
namespace {

std::string format_seconds(std::chrono::steady_clock::duration duration) {
  const double seconds = std::chrono::duration<double>(duration).count();
  char text[32];
  std::snprintf(text, sizeof text, seconds >= 1.0 || seconds <= 0.0 ? "%.0f s" : "%.1f s", seconds);
  return text;
}

}  // namespace

std::string format_count(std::uint64_t count) {
  std::string digits = std::to_string(count);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  const std::size_t lead = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i >= lead && (i - lead) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

StallReporter::StallReporter(std::vector<std::shared_ptr<SinkDelivery>> deliveries,
                             StallReporterOptions options)
    : options_(std::move(options)) {
  if (!options_.log) options_.log = &write_log_line_to_stderr;
  const auto now = Clock::now();
  for (auto& delivery : deliveries) {
    Watched watched;
    watched.delivery = std::move(delivery);
    watched.window_start = now;
    outputs_.push_back(std::move(watched));
  }
}

StallReporter::~StallReporter() { stop(); }

void StallReporter::start() {
  if (outputs_.empty()) return;  // nothing to watch: no thread
  thread_ = std::thread([this] { run(); });
}

void StallReporter::run() noexcept {
  MutexLock lock(mutex_);
  while (!stopping_) {
    const auto next_check = std::chrono::steady_clock::now() + options_.check_interval;
    while (!stopping_ && cv_.wait_until(mutex_, next_check) == std::cv_status::no_timeout) {
    }
    if (stopping_) break;
    lock.unlock();
    check(Clock::now());
    lock.lock();
  }
}

void StallReporter::stop() noexcept {
  {
    MutexLock lock(mutex_);
    if (stopped_) return;
    stopped_ = true;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    try {
      thread_.join();
    } catch (...) {
      // join failed (std::system_error): stop() is noexcept, the lines below still go out.
    }
  }
  const auto now = Clock::now();
  for (Watched& output : outputs_) {
    const std::uint64_t full =
        output.delivery->dropped_ring_full_so_far() - output.reported_ring_full;
    const std::uint64_t disabled =
        output.delivery->dropped_sink_disabled_so_far() - output.reported_sink_disabled;
    if (full > 0 || disabled > 0) write_line(output, now, full, disabled, {});
  }
}

void StallReporter::check(Clock::time_point now) noexcept {
  for (Watched& output : outputs_) {
    const SinkDelivery& delivery = *output.delivery;
    const PluginCallProbe probe = delivery.plugin_call();
    std::string stall;
    if (!probe.inside()) {
      output.call_seen_since.reset();
    } else {
      if (!output.call_seen_since || probe.sequence != output.call_sequence) {
        output.call_seen_since = now;  // a call we had not seen running
      }
      output.call_sequence = probe.sequence;
      const auto running = now - *output.call_seen_since;
      if (running >= options_.stall_threshold) {
        try {
          stall = std::string(to_string(probe.call)) + " has not returned for " +
                  format_seconds(running);
        } catch (...) {
          // No memory for the stall text: the drops still get their line.
        }
      }
    }
    const std::uint64_t full = delivery.dropped_ring_full_so_far() - output.reported_ring_full;
    const std::uint64_t disabled =
        delivery.dropped_sink_disabled_so_far() - output.reported_sink_disabled;
    if (full == 0 && disabled == 0) {
      // Nothing pending: the next line's "in the last N s" starts here.
      output.window_start = now;
      if (stall.empty()) continue;
    }
    if ((full > 0 || disabled > 0) && !output.drops_pending_since) output.drops_pending_since = now;
    // Drops while a call is running: wait (at most the stall threshold) to
    // tell whether that call is why, so that the line names the cause.
    if (probe.inside() && stall.empty() && output.drops_pending_since &&
        now - *output.drops_pending_since < options_.stall_threshold)
      continue;
    if (output.last_line && now - *output.last_line < options_.line_interval) continue;
    write_line(output, now, full, disabled, stall);
  }
}

void StallReporter::write_line(Watched& output, Clock::time_point now, std::uint64_t full,
                               std::uint64_t disabled, const std::string& stall) noexcept {
  try {
    std::string line = "tokenspeed-metrics: output '" + output.delivery->name() + "'";
    if (!options_.process_name.empty()) line += " in " + options_.process_name;
    line += ":";
    const char* separator = " ";
    const std::string window = " in the last " + format_seconds(now - output.window_start);
    if (full > 0) {
      line += separator + format_count(full) + " events dropped (ring full)" + window;
      separator = "; ";
    }
    if (disabled > 0) {
      line += separator + format_count(disabled) + " events dropped (output disabled)" + window;
      separator = "; ";
    }
    if (!stall.empty()) line += separator + stall;
    options_.log(line);
  } catch (...) {
    return;  // out of memory: the counts stay pending for the next line
  }
  output.reported_ring_full += full;
  output.reported_sink_disabled += disabled;
  output.window_start = now;
  output.last_line = now;
  output.drops_pending_since.reset();
}

}  // namespace tokenspeed::metrics
