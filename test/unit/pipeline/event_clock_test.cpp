// event_clock_test.cpp — a raw reading of the event clock (the TSC or
// CLOCK_REALTIME, whichever this machine uses) converts to the Unix time at
// which it was taken, and a duration in the de-duplication clock's units is
// never shorter than asked.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>

#include "eventually.hpp"
#include "pipeline/event_clock.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;
using tokenspeed::metrics::test::eventually;

namespace {

// How far a converted reading may stray from the wall clock: the slope's
// error over the moments since calibration, far below a millisecond.
constexpr std::int64_t kToleranceNs = 5'000'000;

}  // namespace

TEST_CASE("a raw reading converts to the Unix time at which it was taken") {
  WallClockConverter converter;
  for (int i = 0; i < 100; ++i) {
    const std::int64_t before = event_clock::realtime_ns();
    const std::int64_t raw = event_clock::raw_now();
    const std::int64_t after = event_clock::realtime_ns();
    const std::int64_t unix_ns = converter.to_unix_ns(raw);
    CHECK(unix_ns >= before - kToleranceNs);
    CHECK(unix_ns <= after + kToleranceNs);
  }
}

TEST_CASE("the conversion keeps the order of readings") {
  WallClockConverter converter;
  const std::int64_t first = event_clock::raw_now();
  const std::int64_t second = event_clock::raw_now();
  CHECK(converter.to_unix_ns(first) <= converter.to_unix_ns(second));
}

TEST_CASE("the realtime source converts as the identity") {
  WallClockConverter converter;
  if (event_clock::source == EventClockSource::realtime) {
    CHECK(converter.to_unix_ns(123456789) == 123456789);
    CHECK(converter.ns_per_tick() == 1.0);
  } else {
    CHECK(converter.ns_per_tick() > 0.0);
  }
}

TEST_CASE("a duration in de-duplication ticks is never shorter than asked") {
  const std::int64_t ticks = event_clock::monotonic_ticks(20ms);
  REQUIRE(ticks > 0);
  const auto started = std::chrono::steady_clock::now();
  const std::int64_t start = event_clock::monotonic_from_raw(event_clock::raw_now());
  REQUIRE(eventually(
      [&] { return event_clock::monotonic_from_raw(event_clock::raw_now()) - start >= ticks; }));
  CHECK(std::chrono::steady_clock::now() - started >= 20ms);
}
