// event_clock.cpp — picks the event clock source once per process and
// calibrates the TSC against CLOCK_REALTIME on delivery threads. Never used
// on the hot path (the raw read is inline in event_clock.hpp).
#include "pipeline/event_clock.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace tokenspeed::metrics {

namespace event_clock {

EventClockSource detect_source() noexcept {
#if defined(__x86_64__)
  try {
    if (const char* forced = std::getenv("TOKENSPEED_METRICS_EVENT_CLOCK");
        forced != nullptr && std::strcmp(forced, "realtime") == 0) {
      return EventClockSource::realtime;
    }
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
      if (line.rfind("flags", 0) != 0) continue;
      const bool constant = line.find(" constant_tsc") != std::string::npos;
      const bool nonstop = line.find(" nonstop_tsc") != std::string::npos;
      return constant && nonstop ? EventClockSource::tsc : EventClockSource::realtime;
    }
  } catch (...) {
    // /proc/cpuinfo unreadable: the wall clock (realtime) is the safe source.
  }
#endif
  return EventClockSource::realtime;
}

namespace {

// TSC ticks per nanosecond, measured over about 2 ms of CLOCK_MONOTONIC.
double measure_ticks_per_ns() noexcept {
  const std::int64_t ns0 = monotonic_ns();
  const std::int64_t t0 = tsc_ticks();
  std::int64_t ns1 = ns0;
  std::int64_t t1 = t0;
  while (ns1 - ns0 < 2'000'000) {
    ns1 = monotonic_ns();
    t1 = tsc_ticks();
  }
  return t1 > t0 ? static_cast<double>(t1 - t0) / static_cast<double>(ns1 - ns0) : 1.0;
}

}  // namespace

std::int64_t monotonic_ticks(std::chrono::nanoseconds duration) noexcept {
  if (source != EventClockSource::tsc) return static_cast<std::int64_t>(duration.count());
  static const double ticks_per_ns = measure_ticks_per_ns();
  return static_cast<std::int64_t>(static_cast<double>(duration.count()) * ticks_per_ns * 1.005) +
         1;
}

}  // namespace event_clock

namespace {

struct Pair {
  std::int64_t ticks;
  std::int64_t ns;
};

// A (TSC, CLOCK_REALTIME) pair read as close together as possible: the
// tightest bracket of a few tries.
Pair read_pair() noexcept {
  Pair best{0, 0};
  std::int64_t best_span = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    const std::int64_t t0 = event_clock::tsc_ticks();
    const std::int64_t ns = event_clock::realtime_ns();
    const std::int64_t t1 = event_clock::tsc_ticks();
    if (t1 - t0 < best_span) {
      best_span = t1 - t0;
      best = Pair{t0 + (t1 - t0) / 2, ns};
    }
  }
  return best;
}

}  // namespace

WallClockConverter::WallClockConverter() noexcept {
  if (event_clock::source != EventClockSource::tsc) return;
  const Pair first = read_pair();
  // A first slope over about one millisecond; refined every second after.
  Pair second = read_pair();
  while (second.ns - first.ns < 1'000'000) second = read_pair();
  base_ticks_ = first.ticks;
  base_ns_ = first.ns;
  anchor_ticks_ = second.ticks;
  anchor_ns_ = second.ns;
  if (second.ticks > first.ticks) {
    ns_per_tick_ =
        static_cast<double>(second.ns - first.ns) / static_cast<double>(second.ticks - first.ticks);
  }
}

void WallClockConverter::maybe_recalibrate() noexcept {
  if (event_clock::source != EventClockSource::tsc) return;
  const std::int64_t now = event_clock::tsc_ticks();
  if (static_cast<double>(now - anchor_ticks_) * ns_per_tick_ < 1e9) return;
  const Pair pair = read_pair();
  if (pair.ticks > base_ticks_ && pair.ns > base_ns_) {
    ns_per_tick_ =
        static_cast<double>(pair.ns - base_ns_) / static_cast<double>(pair.ticks - base_ticks_);
  }
  anchor_ticks_ = pair.ticks;
  anchor_ns_ = pair.ns;
}

}  // namespace tokenspeed::metrics
