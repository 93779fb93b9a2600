// event_ring_test.cpp — the 16-byte-slot ring: what goes in comes out (value,
// weight, series number, time), the time-base and weight markers, the event
// limit, wrap-around, and one producer against one consumer thread.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include "pipeline/event_ring.hpp"

using tokenspeed::metrics::EventRing;
using tokenspeed::metrics::RingEvent;

namespace {

std::vector<RingEvent> pop_all(EventRing& ring) {
  std::vector<RingEvent> out;
  RingEvent batch[7];
  while (const std::size_t n = ring.pop(batch, 7)) out.insert(out.end(), batch, batch + n);
  return out;
}

}  // namespace

TEST_CASE("an event comes out as it went in: series number, value, weight and time") {
  EventRing ring(16);
  REQUIRE(ring.try_push(3, 2.5, 1, 1'000'000));
  REQUIRE(ring.try_push(4, -0.0, 7, 1'000'010));
  REQUIRE(ring.try_push(5, std::numeric_limits<double>::infinity(), 1, 1'000'020));
  const std::vector<RingEvent> out = pop_all(ring);
  REQUIRE(out.size() == 3);
  CHECK(out[0].series == 3);
  CHECK(out[0].value == 2.5);
  CHECK(out[0].weight == 1);
  CHECK(out[0].raw_time == 1'000'000);
  CHECK(out[1].series == 4);
  CHECK(std::signbit(out[1].value));
  CHECK(out[1].weight == 7);  // from its marker, and only for that event
  CHECK(out[1].raw_time == 1'000'010);
  CHECK(out[2].weight == 1);
  CHECK(out[2].raw_time == 1'000'020);
  CHECK(ring.pushed.load() == 3);
  CHECK(ring.empty());
}

TEST_CASE("a time that does not fit 32 bits of delta gets a new base, also backwards") {
  EventRing ring(16);
  const std::int64_t t0 = std::int64_t{1} << 40;
  const std::vector<std::int64_t> times = {
      t0, t0 + 0xFFFFFFFF, t0 + 0x100000000, t0 - 5, std::numeric_limits<std::int64_t>::max(), 0};
  for (const std::int64_t t : times) REQUIRE(ring.try_push(1, 1.0, 1, t));
  const std::vector<RingEvent> out = pop_all(ring);
  REQUIRE(out.size() == times.size());
  for (std::size_t i = 0; i < times.size(); ++i) CHECK(out[i].raw_time == times[i]);
}

TEST_CASE("the ring holds exactly its capacity in events, markers or not") {
  for (const std::uint64_t weight : {std::uint64_t{1}, std::uint64_t{9}}) {
    EventRing ring(5);
    for (int i = 0; i < 5; ++i) REQUIRE(ring.try_push(1, i, weight, i));
    CHECK_FALSE(ring.try_push(1, 5, weight, 5));
    CHECK(ring.pushed.load() == 5);
    RingEvent one[1];
    REQUIRE(ring.pop(one, 1) == 1);
    CHECK(one[0].value == 0);
    CHECK(one[0].weight == weight);
    CHECK(ring.try_push(1, 5, weight, 5));  // room for exactly one again
    CHECK_FALSE(ring.try_push(1, 6, weight, 6));
    CHECK(pop_all(ring).size() == 5);
  }
}

TEST_CASE("a batch that ends between a weight marker and its event keeps the weight") {
  EventRing ring(8);
  REQUIRE(ring.try_push(1, 1.0, 1, 100));  // base marker + event
  REQUIRE(ring.try_push(2, 2.0, 4, 101));  // weight marker + event
  RingEvent one[1];
  REQUIRE(ring.pop(one, 1) == 1);  // stops after the first event
  REQUIRE(ring.pop(one, 1) == 1);
  CHECK(one[0].series == 2);
  CHECK(one[0].weight == 4);
  CHECK(one[0].raw_time == 101);
}

TEST_CASE("wrapping around many times keeps every event in order") {
  EventRing ring(3);
  std::uint64_t next_out = 0;
  for (std::uint64_t i = 0; i < 10'000; ++i) {
    const std::int64_t t = static_cast<std::int64_t>(i) << 29;  // a new base every 8th event
    REQUIRE(
        ring.try_push(static_cast<std::uint32_t>(i % 1000), static_cast<double>(i), i % 3 + 1, t));
    if (i % 3 == 2) {
      for (const RingEvent& e : pop_all(ring)) {
        CHECK(e.value == static_cast<double>(next_out));
        CHECK(e.weight == next_out % 3 + 1);
        CHECK(e.raw_time == static_cast<std::int64_t>(next_out) << 29);
        ++next_out;
      }
    }
  }
  CHECK(next_out == 9'999);
}

TEST_CASE("one producer and one consumer thread: nothing lost, duplicated or reordered") {
  EventRing ring(64);
  constexpr std::uint64_t kEvents = 2'000'000;
  std::thread consumer([&] {
    std::uint64_t expected = 0;
    RingEvent batch[32];
    bool ordered = true;
    while (expected < kEvents) {
      const std::size_t n = ring.pop(batch, 32);
      for (std::size_t i = 0; i < n; ++i) {
        ordered = ordered && batch[i].value == static_cast<double>(expected) &&
                  batch[i].weight == expected % 5 + 1 &&
                  batch[i].raw_time == static_cast<std::int64_t>(expected * 1000);
        ++expected;
      }
    }
    CHECK(ordered);
  });
  for (std::uint64_t i = 0; i < kEvents;) {
    // A full ring refuses; the producer retries the same event.
    if (ring.try_push(1, static_cast<double>(i), i % 5 + 1, static_cast<std::int64_t>(i * 1000)))
      ++i;
  }
  consumer.join();
  CHECK(ring.pushed.load() == kEvents);
  CHECK(ring.empty());
}
