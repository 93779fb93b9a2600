// event_clock.hpp — the event timestamp: a raw read on the hot path (invariant
// TSC, else vDSO CLOCK_REALTIME) converted to Unix ns on the delivery thread.
// The hot-path read never makes a system call, locks or allocates.
// Tested in test/unit/pipeline/event_router_test.cpp (event times).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace tokenspeed::metrics {

enum class EventClockSource {
  tsc,       // rdtsc, converted to wall time on the delivery thread (see docs/performance.md)
  realtime,  // clock_gettime(CLOCK_REALTIME) through the vDSO
};

namespace event_clock {

// Chosen once per process: the TSC when /proc/cpuinfo reports constant_tsc and
// nonstop_tsc (it then ticks at a fixed rate across cores and idle states),
// otherwise CLOCK_REALTIME. TOKENSPEED_METRICS_EVENT_CLOCK=realtime forces the
// fallback.
EventClockSource detect_source() noexcept;
inline const EventClockSource source = detect_source();

inline std::int64_t realtime_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline std::int64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

inline std::int64_t tsc_ticks() noexcept {
#if defined(__x86_64__)
  return static_cast<std::int64_t>(__rdtsc());
#else
  return realtime_ns();
#endif
}

// The hot-path read: meaning depends on `source`; convert with
// WallClockConverter.
inline std::int64_t raw_now() noexcept {
  return source == EventClockSource::tsc ? tsc_ticks() : realtime_ns();
}

// The gauge de-duplication clock, from the raw reading that stamps the
// event: that reading itself under the TSC (monotonic: constant and
// nonstop), CLOCK_MONOTONIC otherwise (CLOCK_REALTIME can step).
inline std::int64_t monotonic_from_raw(std::int64_t raw) noexcept {
  return source == EventClockSource::tsc ? raw : monotonic_ns();
}

// A duration in the units of monotonic_from_raw, never shorter than asked:
// TSC ticks measured against CLOCK_MONOTONIC once per process (about 2 ms,
// on first use) with 0.5 % added for the measurement's error; nanoseconds
// otherwise.
std::int64_t monotonic_ticks(std::chrono::nanoseconds duration) noexcept;

}  // namespace event_clock

// Converts raw readings to Unix nanoseconds. The slope (ns per tick) is
// measured over an ever longer baseline, the offset follows the latest
// (TSC, CLOCK_REALTIME) pair so wall-clock steps are picked up within one
// recalibration period. Identity when the source is realtime.
// Threading: one instance per delivery thread, used only by that thread.
class WallClockConverter {
 public:
  WallClockConverter() noexcept;

  std::int64_t to_unix_ns(std::int64_t raw) const noexcept {
    if (event_clock::source != EventClockSource::tsc) return raw;
    const double delta = static_cast<double>(raw - anchor_ticks_) * ns_per_tick_;
    return anchor_ns_ + static_cast<std::int64_t>(delta);
  }

  // Re-reads a (TSC, wall) pair when at least one second passed since the
  // last one. Cheap when not due; call it from the delivery thread loop.
  void maybe_recalibrate() noexcept;

  double ns_per_tick() const noexcept { return ns_per_tick_; }

 private:
  std::int64_t base_ticks_ = 0;  // first pair: the slope's baseline
  std::int64_t base_ns_ = 0;
  std::int64_t anchor_ticks_ = 0;  // latest pair: the offset
  std::int64_t anchor_ns_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace tokenspeed::metrics
