// exponential_slot_reader_test.cpp — the rule "a writer stopped anywhere
// loses at most the observation in flight", proven by enumeration: for
// random observations (subnormals, huge values and weights, both signs,
// zero, NaN) the writer is stopped after every one of its stores, and the
// reader's copy of what it left must be the histogram before that
// observation or after it, at the scale the copy shows. Also: a live writer
// stopped mid-observe is read back without waiting for it, slots no writer
// could leave are refused without reading past the series, and counts of
// 2^64 and more saturate.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "core/exponential_slot_reader.hpp"
#include "core/exponential_slots.hpp"

using namespace tokenspeed::metrics;

namespace {

// A histogram's content at one scale, independent of how a run is laid out:
// (sign, index) -> count, zero count and sum.
struct Content {
  std::map<std::pair<int, std::int64_t>, std::uint64_t> buckets;
  std::uint64_t zero_count = 0;
  double sum = 0;
  double not_finite = 0;
  bool operator==(const Content&) const = default;
};

Content content_at(const kit::ExponentialPoint& point, double not_finite, std::int32_t scale) {
  Content content;
  content.zero_count = point.zero_count;
  content.sum = point.sum;
  content.not_finite = not_finite;
  const int by = point.scale - scale;
  const auto add = [&](int sign, const kit::OtlpExponentialBuckets& run) {
    for (std::size_t k = 0; k < run.bucket_counts.size(); ++k) {
      if (run.bucket_counts[k] == 0) continue;
      const std::int64_t index =
          kit::exponential_detail::floor_shift(run.offset + static_cast<std::int64_t>(k), by);
      content.buckets[{sign, index}] += run.bucket_counts[k];
    }
  };
  add(0, point.positive);
  add(1, point.negative);
  return content;
}

kit::ExponentialPoint point_of(std::span<const double> copy,
                               const ExponentialHistogramOptions& options) {
  kit::ExponentialPoint point;
  REQUIRE(exponential_point(copy, options, point));
  return point;
}

// Stops the writer after its `stop_at`-th store by copying the slots as they
// are then: exactly what a process killed there leaves in its file.
struct StopAt {
  const std::vector<double>* slots;
  long stop_at;
  long stores = 0;
  std::vector<double> left;
  void operator()() {
    if (stores++ == stop_at) left = *slots;
  }
};

double random_value(std::mt19937_64& random) {
  switch (random() % 8) {
    case 0:
      return std::numeric_limits<double>::denorm_min() * static_cast<double>(random() % 4 + 1);
    case 1:
      return (random() % 2 ? -1 : 1) * std::ldexp(1.0, static_cast<int>(random() % 2000) - 1000);
    case 2:
      return 0.0;
    case 3:
      return random() % 16 == 0 ? std::numeric_limits<double>::quiet_NaN()
                                : std::numeric_limits<double>::max();
    default:
      return (random() % 4 == 0 ? -1 : 1) *
             std::ldexp(1.0 + static_cast<double>(random() % 1000) / 1000.0,
                        static_cast<int>(random() % 40) - 20);
  }
}

std::uint64_t random_weight(std::mt19937_64& random) {
  return random() % 8 == 0 ? (std::uint64_t{1} << 40) : random() % 3 + 1;
}

}  // namespace

TEST_CASE("a writer stopped after any store leaves the histogram before or after its observation") {
  std::mt19937_64 random(GENERATE(1, 2, 3, 4));
  const std::uint32_t max_buckets = GENERATE(4u, 9u, 40u);
  const ExponentialHistogramOptions options{max_buckets, 20, 1e-300};
  std::vector<double> slots(exponential_slot_count(options), 0.0);
  std::map<ExponentialJournal, long> stopped_in;
  for (int observation = 0; observation < 120; ++observation) {
    const double value = random_value(random);
    const std::uint64_t weight = random_weight(random);
    const std::vector<double> before = slots;
    // How many stores this observation makes: a dry run on a copy.
    std::vector<double> dry = slots;
    StopAt count_only{&dry, -1};
    observe_exponential(dry.data(), options, value, weight, value, count_only);
    for (long stop = 0; stop < count_only.stores; ++stop) {
      slots = before;
      StopAt stopper{&slots, stop};
      observe_exponential(slots.data(), options, value, weight, value, stopper);
      std::vector<double> copy = stopper.left;
      stopped_in[static_cast<ExponentialJournal>(copy[ExponentialSlot::journal])] += 1;
      const ExponentialCopy how = copy_exponential_slots(stopper.left.data(), copy, true);
      REQUIRE(how != ExponentialCopy::unsettled);
      const kit::ExponentialPoint left = point_of(copy, options);
      const Content seen = content_at(left, copy[ExponentialSlot::not_finite], left.scale);
      const kit::ExponentialPoint old_point = point_of(before, options);
      const kit::ExponentialPoint new_point = point_of(slots, options);
      INFO("observation " << observation << " of " << value << " x " << weight
                          << ", stopped after store " << stop << " of " << count_only.stores);
      REQUIRE(left.scale >= new_point.scale);
      REQUIRE(left.scale <= old_point.scale);
      const bool as_before =
          seen == content_at(old_point, before[ExponentialSlot::not_finite], left.scale);
      // The state after is compared at its own scale, the coarser one: the
      // copy brought forward to it must be the same content.
      const bool as_after =
          content_at(left, copy[ExponentialSlot::not_finite], new_point.scale) ==
          content_at(new_point, slots[ExponentialSlot::not_finite], new_point.scale);
      REQUIRE((as_before || as_after));
    }
  }
  // Every kind of change was interrupted somewhere.
  CHECK(stopped_in[ExponentialJournal::rescaling] > 0);
  CHECK(stopped_in[ExponentialJournal::shifting] > 0);
  CHECK(stopped_in[ExponentialJournal::counting] > 0);
  CHECK(stopped_in[ExponentialJournal::idle] > 0);
}

TEST_CASE("a live writer stopped inside an observe is read back without waiting for it") {
  const ExponentialHistogramOptions options{16, 20, 0};
  std::vector<double> slots(exponential_slot_count(options), 0.0);
  observe_exponential(slots.data(), options, 3.0, 2, 6.0);
  std::atomic<bool> release{false};
  std::atomic<bool> stopped{false};
  long stores = 0;
  auto hold_at_third = [&] {
    if (++stores == 3) {
      stopped = true;
      while (!release.load()) std::this_thread::yield();
    }
  };
  std::thread writer(
      [&] { observe_exponential(slots.data(), options, 5.0, 1, 5.0, hold_at_third); });
  while (!stopped.load()) std::this_thread::yield();
  std::vector<double> copy(slots.size());
  REQUIRE(copy_exponential_slots(slots.data(), copy) == ExponentialCopy::repaired);
  REQUIRE(point_of(copy, options).count == 2);
  REQUIRE(point_of(copy, options).sum == 6.0);
  release = true;
  writer.join();
  REQUIRE(copy_exponential_slots(slots.data(), copy) == ExponentialCopy::published);
  REQUIRE(point_of(copy, options).count == 3);
}

TEST_CASE("slots no writer could leave are refused without reading past the series") {
  const ExponentialHistogramOptions options{8, 20, 0};
  std::mt19937_64 random(7);
  std::vector<double> slots(exponential_slot_count(options), 0.0);
  for (int i = 0; i < 40; ++i)
    observe_exponential(slots.data(), options, random_value(random), 1, 0);
  const double garbage[] = {
      -1, 0, 1, 2, 3, 4, 5, 7.5, 9, 17, 1e9, -1e300, std::numeric_limits<double>::quiet_NaN()};
  for (int journal = 0; journal <= 5; ++journal) {
    for (std::size_t slot = ExponentialSlot::journal + 1; slot < ExponentialSlot::buckets; ++slot) {
      for (const double value : garbage) {
        std::vector<double> copy = slots;
        copy[ExponentialSlot::sequence] += 1;
        copy[ExponentialSlot::journal] = journal;
        copy[slot] = value;
        // Either refused, or repaired into something a point can be made of
        // or refused: never a read or write past the copy (ASan checks).
        if (repair_exponential_copy(copy)) {
          kit::ExponentialPoint point;
          (void)exponential_point(copy, options, point);
        }
      }
    }
  }
  std::vector<double> copy = slots;
  copy[ExponentialSlot::journal] = 9;
  REQUIRE_FALSE(repair_exponential_copy(copy));
  kit::ExponentialPoint point;
  slots[ExponentialSlot::positive_length] = 9;  // past max_buckets
  REQUIRE_FALSE(exponential_point(slots, options, point));
  slots[ExponentialSlot::positive_length] = 0;
  slots[ExponentialSlot::scales_lowered] = 40;  // below the lowest scale
  REQUIRE_FALSE(exponential_point(slots, options, point));
  REQUIRE_FALSE(exponential_point(std::vector<double>(5), options, point));
}

TEST_CASE("counts of 2^64 and more saturate instead of wrapping to 0") {
  const ExponentialHistogramOptions options{8, 20, 0};
  std::vector<double> slots(exponential_slot_count(options), 0.0);
  const std::uint64_t half = std::uint64_t{1} << 63;
  observe_exponential(slots.data(), options, 1.5, half, 1.5);
  observe_exponential(slots.data(), options, 1.5, half, 1.5);
  observe_exponential(slots.data(), options, 0.0, half, 0.0);
  const kit::ExponentialPoint point = point_of(slots, options);
  REQUIRE(point.count == std::numeric_limits<std::uint64_t>::max());
  REQUIRE(point.positive.bucket_counts.back() == std::numeric_limits<std::uint64_t>::max());
  REQUIRE(kit::exponential_detail::saturated_count(-1.0) == 0);
  REQUIRE(kit::exponential_detail::saturated_count(std::numeric_limits<double>::quiet_NaN()) == 0);
  REQUIRE(kit::exponential_detail::saturated_count(0x1p63) == std::uint64_t{1} << 63);
}
