// exponential_slots_test.cpp — an exponential series kept in its slots
// counts as the kit's histogram does (same scale, same buckets, however it
// had to downscale or move its run), refuses NaN and +/-Inf into a count of
// their own, and a reader copying it while writers observe always gets a
// state a writer published (a writer stopped inside an observe:
// exponential_slot_reader_test.cpp).
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <thread>
#include <vector>

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "core/exponential_slot_reader.hpp"
#include "core/exponential_slots.hpp"

using namespace tokenspeed::metrics;

namespace {

std::vector<double> fresh_slots(const ExponentialHistogramOptions& options) {
  return std::vector<double>(exponential_slot_count(options), 0.0);
}

kit::ExponentialPoint point_of(const std::vector<double>& slots,
                               const ExponentialHistogramOptions& options) {
  std::vector<double> copy(slots.size());
  REQUIRE(copy_exponential_slots(slots.data(), copy) == ExponentialCopy::published);
  kit::ExponentialPoint point;
  REQUIRE(exponential_point(copy, options, point));
  return point;
}

kit::ExponentialPoint kit_point(const kit::ExponentialHistogram& histogram) {
  kit::ExponentialPoint point;
  histogram.to_otlp(point);
  return point;
}

// Trailing zeros aside (the kit trims its runs to non-empty buckets).
std::vector<std::uint64_t> trimmed(std::vector<std::uint64_t> counts) {
  while (!counts.empty() && counts.back() == 0) counts.pop_back();
  return counts;
}

void require_same(const kit::ExponentialPoint& slots, const kit::ExponentialPoint& kit) {
  REQUIRE(slots.scale == kit.scale);
  REQUIRE(slots.count == kit.count);
  REQUIRE(slots.zero_count == kit.zero_count);
  REQUIRE(slots.sum == Approx(kit.sum));
  REQUIRE(trimmed(slots.positive.bucket_counts) == trimmed(kit.positive.bucket_counts));
  if (!kit.positive.bucket_counts.empty()) REQUIRE(slots.positive.offset == kit.positive.offset);
  REQUIRE(trimmed(slots.negative.bucket_counts) == trimmed(kit.negative.bucket_counts));
  if (!kit.negative.bucket_counts.empty()) REQUIRE(slots.negative.offset == kit.negative.offset);
}

}  // namespace

TEST_CASE("observations in the slots give the kit's histogram: scale, offsets and counts") {
  const ExponentialHistogramOptions options{16, 20, 0.001};
  std::vector<double> slots = fresh_slots(options);
  kit::ExponentialHistogram reference(
      {options.max_buckets, options.max_scale, options.zero_threshold});
  // Values that widen the range upwards, downwards (the run moves up) and on
  // both signs, with weights, and values inside the zero bucket.
  const double values[] = {1.5, 1.6, 1.4, 3.0, 0.7, 0.0005, -2.0, -0.25, 100.0, 0.01, 1e-3, 4096.0};
  std::uint64_t weight = 1;
  for (const double value : values) {
    observe_exponential(slots.data(), options, value, weight, value * static_cast<double>(weight));
    reference.observe(value, weight);
    require_same(point_of(slots, options), kit_point(reference));
    weight = weight % 3 + 1;
  }
  REQUIRE(point_of(slots, options).scale < options.max_scale);  // it had to downscale
}

TEST_CASE("a run that grows downwards keeps its counts in their buckets") {
  const ExponentialHistogramOptions options{160, 3, 0};
  std::vector<double> slots = fresh_slots(options);
  kit::ExponentialHistogram reference({options.max_buckets, options.max_scale, 0});
  for (double value = 8.0; value > 0.05; value /= 1.3) {
    observe_exponential(slots.data(), options, value, 2, 2 * value);
    reference.observe(value, 2);
  }
  const kit::ExponentialPoint point = point_of(slots, options);
  REQUIRE(point.scale == 3);  // 160 buckets hold the range at the first scale
  require_same(point, kit_point(reference));
}

TEST_CASE("NaN and infinities are refused into a count of their own") {
  const ExponentialHistogramOptions options;
  std::vector<double> slots = fresh_slots(options);
  observe_exponential(slots.data(), options, 2.0, 1, 2.0);
  observe_exponential(slots.data(), options, std::numeric_limits<double>::quiet_NaN(), 3, 0);
  observe_exponential(slots.data(), options, std::numeric_limits<double>::infinity(), 1, 0);
  observe_exponential(slots.data(), options, -std::numeric_limits<double>::infinity(), 1, 0);
  const kit::ExponentialPoint point = point_of(slots, options);
  REQUIRE(point.count == 1);
  REQUIRE(point.sum == 2.0);
  REQUIRE(slots[ExponentialSlot::not_finite] == 5.0);
}

TEST_CASE("the widest range of doubles fits at the lowest scale in the fewest buckets") {
  const ExponentialHistogramOptions options{kMinExponentialBuckets, 20, 0};
  std::vector<double> slots = fresh_slots(options);
  for (const double value : {std::numeric_limits<double>::denorm_min(), 1.0,
                             std::numeric_limits<double>::max(), -1e-300, -1e300}) {
    observe_exponential(slots.data(), options, value, 1, value);
  }
  const kit::ExponentialPoint point = point_of(slots, options);
  REQUIRE(point.count == 5);
  REQUIRE(point.scale >= kit::kExponentialMinScale);
}

TEST_CASE("a reader copying while writers observe always gets a published state") {
  const ExponentialHistogramOptions options{20, 20, 0};
  std::vector<double> slots = fresh_slots(options);
  constexpr int kWriters = 3;
  constexpr int kObservations = 20000;
  std::atomic<bool> writing{true};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kObservations; ++i) {
        // Values that keep widening the range: downscales under way.
        const double value = std::ldexp(1.0 + (i % 7) / 8.0, (i * (w + 1)) % 40 - 20);
        observe_exponential(slots.data(), options, (i % 5 == 0) ? -value : value, 1, 0);
      }
    });
  }
  std::thread reader([&] {
    std::vector<double> copy(slots.size());
    while (writing.load()) {
      if (copy_exponential_slots(slots.data(), copy) == ExponentialCopy::unsettled) continue;
      kit::ExponentialPoint point;
      REQUIRE(exponential_point(copy, options, point));
      // A torn copy would show a count that is not the buckets' total.
      REQUIRE(point.count == static_cast<std::uint64_t>(copy[ExponentialSlot::count]));
    }
  });
  for (std::thread& writer : writers) writer.join();
  writing = false;
  reader.join();
  REQUIRE(point_of(slots, options).count == kWriters * kObservations);
}

TEST_CASE("slots that no writer could have published are no data point") {
  const ExponentialHistogramOptions options{8, 20, 0};
  std::vector<double> slots = fresh_slots(options);
  kit::ExponentialPoint point;
  slots[ExponentialSlot::positive_length] = 9;  // past max_buckets
  REQUIRE_FALSE(exponential_point(slots, options, point));
  slots[ExponentialSlot::positive_length] = 0;
  slots[ExponentialSlot::scales_lowered] = 40;  // below the lowest scale
  REQUIRE_FALSE(exponential_point(slots, options, point));
  REQUIRE_FALSE(exponential_point(std::vector<double>(5), options, point));
}
