// exponential_histogram_test.cpp — the kit's exponential histogram: the
// value-to-index mapping at and around powers of two and at the ends of the
// doubles, downscaling and merging without losing a count, the zero bucket,
// negative values, weights, NaN and infinities, the export forms (OTLP,
// Prometheus, classic le buckets), and an observe that allocates nothing once
// its range exists.
#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <utility>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "allocation_counter.hpp"

namespace kit = tokenspeed::metrics::kit;
using Observed = kit::ExponentialHistogram::Observed;
using Merged = kit::ExponentialHistogram::Merged;
using NativeExported = kit::ExponentialHistogram::NativeExported;

namespace {

const int32_t kScales[] = {-10, -4, -1, 0, 1, 3, 8, 9, 12, 20};

// floor(a / 2^k) for any sign.
int64_t floor_div_pow2(int64_t a, int k) {
  return static_cast<int64_t>(std::floor(std::ldexp(static_cast<double>(a), -k)));
}

// A latency-like stream: log-normal around 50 ms.
std::vector<double> latencies(std::size_t n, unsigned seed) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> latency(std::log(0.05), 1.0);
  std::vector<double> values(n);
  for (double& v : values) v = latency(random);
  return values;
}

// index -> count of one sign, as the histogram holds it.
std::map<int32_t, uint64_t> counts_of(const kit::ExponentialBuckets& b) {
  std::map<int32_t, uint64_t> out;
  b.for_each([&](int32_t index, uint64_t count) {
    if (count != 0) out[index] = count;
  });
  return out;
}

// What a Prometheus span/delta list says, back in our indices (Prometheus' - 1).
std::map<int32_t, uint64_t> decode(const kit::NativeBuckets& b) {
  std::map<int32_t, uint64_t> out;
  int64_t index = 0;
  int64_t count = 0;
  std::size_t delta = 0;
  for (std::size_t s = 0; s < b.spans.size(); ++s) {
    index += b.spans[s].offset;
    for (uint32_t k = 0; k < b.spans[s].length; ++k, ++index) {
      count += b.deltas.at(delta++);
      REQUIRE(count >= 0);
      if (count != 0) out[static_cast<int32_t>(index - 1)] = static_cast<uint64_t>(count);
    }
  }
  CHECK(delta == b.deltas.size());
  return out;
}

void require_same(const kit::ExponentialHistogram& a, const kit::ExponentialHistogram& b) {
  CHECK(a.scale() == b.scale());
  CHECK(a.count() == b.count());
  CHECK(a.zero_count() == b.zero_count());
  CHECK(a.min() == b.min());
  CHECK(a.max() == b.max());
  CHECK(a.sum() == Approx(b.sum()));
  CHECK(counts_of(a.positive()) == counts_of(b.positive()));
  CHECK(counts_of(a.negative()) == counts_of(b.negative()));
}

}  // namespace

TEST_CASE("a power of two is the upper boundary of its bucket at every scale") {
  for (const int32_t scale : kScales) {
    for (int e = -1022; e <= 1023; e += (e > -1000 && e < 1000) ? 37 : 1) {
      INFO("scale " << scale << ", 2^" << e);
      const double power = std::ldexp(1.0, e);
      const int64_t expected =
          scale >= 0 ? int64_t{e} * (int64_t{1} << scale) - 1 : floor_div_pow2(e - 1, -scale);
      CHECK(kit::exponential_bucket_index(power, scale) == expected);
      // Just below is the same bucket; just above starts the next one at
      // scale >= 0 (at a lower scale 2^e is inside a bucket unless aligned).
      CHECK(kit::exponential_bucket_index(std::nextafter(power, 0.0), scale) == expected);
      if (e < 1023 || scale <= 0) {
        const int64_t above = scale >= 0 ? expected + 1 : floor_div_pow2(e, -scale);
        CHECK(kit::exponential_bucket_index(std::nextafter(power, INFINITY), scale) == above);
      }
    }
  }
}

TEST_CASE("every value lies above its bucket's lower boundary and at or below the next") {
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-60, 60);
  for (const int32_t scale : kScales) {
    const int samples = scale > 8 ? 3000 : 30000;
    for (int i = 0; i < samples; ++i) {
      const double v = std::ldexp(mantissa(random), exponent(random));
      const int32_t index = kit::exponential_bucket_index(v, scale);
      INFO("scale " << scale << " value " << v << " index " << index);
      CHECK(kit::exponential_lower_boundary(index, scale) < v);
      CHECK(v <= kit::exponential_lower_boundary(index + 1, scale));
    }
  }
}

TEST_CASE("a bucket's lower boundary belongs to the bucket below; the next double to the bucket") {
  std::mt19937_64 random(8);
  for (const int32_t scale : kScales) {
    // Indices whose boundaries are normal doubles: within 2^+-1000.
    const int64_t reach = scale >= 0 ? int64_t{1000} << scale : int64_t{1000} >> -scale;
    std::uniform_int_distribution<int64_t> index(-reach, reach);
    for (int i = 0; i < 2000; ++i) {
      const int32_t bucket = static_cast<int32_t>(index(random));
      const double boundary = kit::exponential_lower_boundary(bucket, scale);
      INFO("scale " << scale << " bucket " << bucket << " boundary " << boundary);
      CHECK(kit::exponential_bucket_index(boundary, scale) == bucket - 1);
      CHECK(kit::exponential_bucket_index(std::nextafter(boundary, INFINITY), scale) == bucket);
    }
  }
}

TEST_CASE("the largest double, the smallest normal and the subnormals map to the end indices") {
  for (const int32_t scale : kScales) {
    INFO("scale " << scale);
    const int64_t top =
        scale >= 0 ? int64_t{1024} * (int64_t{1} << scale) - 1 : floor_div_pow2(1023, -scale);
    CHECK(kit::exponential_bucket_index(DBL_MAX, scale) == top);
    CHECK(kit::exponential_bucket_index(INFINITY, scale) == top);  // 2^1024 is +Inf
    CHECK(kit::exponential_bucket_index(-DBL_MAX, scale) == top);  // the magnitude
    const int64_t normal =
        scale >= 0 ? int64_t{-1022} * (int64_t{1} << scale) - 1 : floor_div_pow2(-1023, -scale);
    CHECK(kit::exponential_bucket_index(DBL_MIN, scale) == normal);
    // Subnormals map exactly: 2^-1074 is a power of two like any other.
    const int64_t least =
        scale >= 0 ? int64_t{-1074} * (int64_t{1} << scale) - 1 : floor_div_pow2(-1075, -scale);
    CHECK(kit::exponential_bucket_index(std::ldexp(1.0, -1074), scale) == least);
    CHECK(kit::exponential_bucket_index(std::ldexp(3.0, -1074), scale) ==
          kit::exponential_bucket_index(std::ldexp(1.5, -1073), scale));
  }
  CHECK(kit::exponential_bucket_index(std::ldexp(1.0, -1074), 20) == -1126170625);
  CHECK(kit::exponential_bucket_index(DBL_MAX, 20) == 1073741823);
}

TEST_CASE("one observation stays at the maximum scale") {
  kit::ExponentialHistogram h;
  REQUIRE(h.observe(0.123) == Observed::kAccepted);
  CHECK(h.scale() == 20);
  CHECK(counts_of(h.positive()) ==
        std::map<int32_t, uint64_t>{{kit::exponential_bucket_index(0.123, 20), 1}});
}

TEST_CASE("downscaling keeps count and sum and files each observation where the lower scale does") {
  const std::vector<double> values = latencies(20000, 1);
  kit::ExponentialHistogram h({20, 20, 0});  // 20 buckets: several downscales on the way
  double sum = 0;
  for (const double v : values) {
    REQUIRE(h.observe(v) == Observed::kAccepted);
    sum += v;
    REQUIRE(h.positive().length() <= 20);
  }
  CHECK(h.scale() < 8);
  CHECK(h.count() == values.size());
  CHECK(h.positive().total() == values.size());
  CHECK(h.sum() == sum);
  std::map<int32_t, uint64_t> expected;
  for (const double v : values) ++expected[kit::exponential_bucket_index(v, h.scale())];
  CHECK(counts_of(h.positive()) == expected);
  CHECK(h.min() == *std::min_element(values.begin(), values.end()));
  CHECK(h.max() == *std::max_element(values.begin(), values.end()));
}

TEST_CASE("both signs share the scale: a wide negative range downscales the positive buckets") {
  kit::ExponentialHistogram h({4, 20, 0});
  h.observe(1.5);
  h.observe(1.6);
  const int32_t before = h.scale();
  h.observe(-1e-6);
  h.observe(-1e6);
  CHECK(h.scale() < before);
  CHECK(h.negative().length() <= 4);
  std::map<int32_t, uint64_t> expected;
  ++expected[kit::exponential_bucket_index(1.5, h.scale())];
  ++expected[kit::exponential_bucket_index(1.6, h.scale())];
  CHECK(counts_of(h.positive()) == expected);
}

TEST_CASE("a range that grows past either end of its ring keeps every count, downscaled too") {
  // At scale 0 the buckets of 2^k are k - 1: walking down, then up, moves the
  // ring's first slot around it and grows it twice.
  kit::ExponentialHistogram h({160, 0, 0});
  std::map<int32_t, uint64_t> expected;
  for (int k = 0; k >= -60; --k) {
    h.observe(std::ldexp(1.0, k), static_cast<uint64_t>(100 - k));
    expected[k - 1] += static_cast<uint64_t>(100 - k);
  }
  for (int k = 1; k <= 60; ++k) {
    h.observe(std::ldexp(1.0, k), static_cast<uint64_t>(k));
    expected[k - 1] += static_cast<uint64_t>(k);
  }
  REQUIRE(h.scale() == 0);
  CHECK(counts_of(h.positive()) == expected);
  h.reduce_scale(-3);
  std::map<int32_t, uint64_t> lower;
  for (const auto& [index, count] : expected)
    lower[index >= 0 ? index / 8 : -((-index + 7) / 8)] += count;
  CHECK(counts_of(h.positive()) == lower);
  CHECK(h.positive().length() ==
        static_cast<uint32_t>(lower.rbegin()->first - lower.begin()->first + 1));
}

TEST_CASE("merging histograms of different scales equals observing everything into one") {
  const std::vector<double> narrow = {1.01, 1.02, 1.03, 1.05, -1.04, 0.0};
  const std::vector<double> wide = latencies(5000, 2);
  kit::ExponentialHistogram a;
  kit::ExponentialHistogram b;
  kit::ExponentialHistogram all;
  for (const double v : narrow) {
    a.observe(v);
    all.observe(v);
  }
  for (const double v : wide) {
    b.observe(-v, 2);
    all.observe(-v, 2);
  }
  REQUIRE(a.scale() > b.scale());
  SECTION("the narrow one takes the wide one") {
    REQUIRE(a.merge(b) == Merged::kMerged);
    require_same(a, all);
  }
  SECTION("the wide one takes the narrow one") {
    REQUIRE(b.merge(a) == Merged::kMerged);
    require_same(b, all);
  }
  SECTION("through the OTLP form") {
    kit::ExponentialPoint point;
    b.to_otlp(point);
    REQUIRE(a.merge(point) == Merged::kMerged);
    require_same(a, all);
  }
}

TEST_CASE("a merge whose union exceeds max_buckets goes down to the scale that holds it") {
  kit::ExponentialHistogram a({8, 20, 0});
  kit::ExponentialHistogram b({8, 20, 0});
  kit::ExponentialHistogram all({8, 20, 0});
  for (const double v : {1.0, 1.5, 2.0}) {
    a.observe(v);
    all.observe(v);
  }
  for (const double v : {1000.0, 1500.0}) {
    b.observe(v);
    all.observe(v);
  }
  REQUIRE(a.merge(b) == Merged::kMerged);
  require_same(a, all);
  CHECK(a.positive().length() <= 8);
}

TEST_CASE("a merge of a different zero threshold or an invalid point changes nothing") {
  kit::ExponentialHistogram h({160, 20, 0});
  h.observe(3);
  kit::ExponentialHistogram other({160, 20, 1e-9});
  other.observe(5);
  CHECK(h.merge(other) == Merged::kZeroThresholdDiffers);
  kit::ExponentialPoint point;
  point.scale = 21;
  point.count = 1;
  point.positive.bucket_counts = {1};
  CHECK(h.merge(point) == Merged::kInvalidPoint);
  point.scale = 3;
  point.count = 2;  // one more than its buckets hold
  CHECK(h.merge(point) == Merged::kInvalidPoint);
  CHECK(h.count() == 1);
  CHECK(h.positive().total() == 1);
}

TEST_CASE("zero and values within the zero threshold count in the zero bucket, either sign") {
  kit::ExponentialHistogram h({160, 20, 1e-3});
  h.observe(0.0);
  h.observe(-0.0);
  h.observe(1e-3);
  h.observe(-1e-3);
  h.observe(1.0001e-3);
  CHECK(h.zero_count() == 4);
  CHECK(h.positive().total() == 1);
  CHECK(h.negative().empty());
  CHECK(h.count() == 5);
}

TEST_CASE("a negative value is counted by its magnitude among the negative buckets") {
  kit::ExponentialHistogram pos;
  kit::ExponentialHistogram neg;
  for (const double v : latencies(2000, 3)) {
    pos.observe(v);
    neg.observe(-v);
  }
  CHECK(counts_of(neg.negative()) == counts_of(pos.positive()));
  CHECK(neg.positive().empty());
  CHECK(neg.sum() == -pos.sum());
  CHECK(neg.min() == -pos.max());
}

TEST_CASE("an observation of weight w counts as w observations; weight 0 counts nothing") {
  kit::ExponentialHistogram weighted;
  kit::ExponentialHistogram repeated;
  for (const double v : {0.01, 0.02, 3.0}) {
    REQUIRE(weighted.observe(v, 5) == Observed::kAccepted);
    for (int i = 0; i < 5; ++i) repeated.observe(v);
  }
  require_same(weighted, repeated);
  CHECK(weighted.observe(7.0, 0) == Observed::kNoWeight);
  CHECK(weighted.count() == 15);
  CHECK(weighted.max() == 3.0);
}

TEST_CASE("NaN and infinities are refused, counted apart and touch nothing else") {
  kit::ExponentialHistogram h;
  h.observe(2.0);
  CHECK(h.observe(NAN) == Observed::kNotFinite);
  CHECK(h.observe(INFINITY, 3) == Observed::kNotFinite);
  CHECK(h.observe(-INFINITY) == Observed::kNotFinite);
  CHECK(h.not_finite_count() == 5);
  CHECK(h.count() == 1);
  kit::ExponentialHistogram merged;
  REQUIRE(merged.merge(h) == Merged::kMerged);
  CHECK(merged.not_finite_count() == 5);
  CHECK(h.sum() == 2.0);
  CHECK(h.max() == 2.0);
  CHECK(h.positive().total() == 1);
  CHECK(h.negative().empty());
}

TEST_CASE("an observation that would need a scale below -10 is refused and counted") {
  kit::ExponentialHistogram h({2, 20, 0});
  // At scale -10, 1.5 is index 0 and 2^-1000 index -1: two buckets; the
  // smallest subnormal would be a third.
  REQUIRE(h.observe(1.5) == Observed::kAccepted);
  REQUIRE(h.observe(std::ldexp(1.0, -1000)) == Observed::kAccepted);
  CHECK(h.scale() == -10);
  CHECK(h.observe(std::ldexp(1.0, -1074)) == Observed::kScaleUnderflow);
  CHECK(h.refused_count() == 1);
  CHECK(h.count() == 2);
  CHECK(h.positive().total() == 2);
}

TEST_CASE("the OTLP form carries each range from its first to its last bucket") {
  kit::ExponentialHistogram h({160, 0, 0});
  for (const double v : {1.5, 6.0, 6.5, -0.3, 0.0}) h.observe(v);
  kit::ExponentialPoint p;
  h.to_otlp(p);
  CHECK(p.scale == 0);
  CHECK(p.count == 5);
  CHECK(p.zero_count == 1);
  CHECK(p.positive.offset == 0);
  CHECK(p.positive.bucket_counts == std::vector<uint64_t>{1, 0, 2});
  CHECK(p.negative.offset == -2);
  CHECK(p.negative.bucket_counts == std::vector<uint64_t>{1});
  CHECK(p.min == -0.3);
  CHECK(p.max == 6.5);
  // Through merge back into an empty histogram, the same histogram.
  kit::ExponentialHistogram back({160, 0, 0});
  REQUIRE(back.merge(p) == Merged::kMerged);
  require_same(back, h);
}

TEST_CASE("the Prometheus spans and deltas decode back to the bucket counts") {
  kit::ExponentialHistogram h({160, 6, 0});
  for (const double v : latencies(3000, 4)) {
    h.observe(v);
    h.observe(-v * 1e-3);
  }
  REQUIRE(h.scale() <= 6);
  kit::PrometheusNativeHistogram native;
  REQUIRE(h.to_prometheus(native) == NativeExported::kExported);
  CHECK(native.schema == h.scale());
  CHECK(native.count == h.count());
  CHECK(decode(native.positive) == counts_of(h.positive()));
  CHECK(decode(native.negative) == counts_of(h.negative()));
}

TEST_CASE("above schema 8 the Prometheus form is the histogram at scale 8") {
  kit::ExponentialHistogram h;  // max scale 20
  for (const double v : {1.0001, 1.0002, 1.0003, 1.01, 1.02}) h.observe(v);
  REQUIRE(h.scale() > 8);
  kit::PrometheusNativeHistogram native;
  REQUIRE(h.to_prometheus(native) == NativeExported::kExported);
  CHECK(native.schema == 8);
  kit::ExponentialHistogram at8 = h;
  at8.reduce_scale(8);
  CHECK(decode(native.positive) == counts_of(at8.positive()));
  CHECK(h.scale() > 8);  // the export changed nothing
}

TEST_CASE("up to max_gap empty buckets stay inside a span; a longer gap starts a new span") {
  kit::ExponentialHistogram h({160, 0, 0});
  // Prometheus indices at schema 0: 2 -> 1, 16 -> 4 (gap 2), 256 -> 8 (gap 3).
  for (const double v : {2.0, 16.0, 16.0, 256.0}) h.observe(v);
  kit::PrometheusNativeHistogram native;
  REQUIRE(h.to_prometheus(native) == NativeExported::kExported);
  REQUIRE(native.positive.spans.size() == 2);
  CHECK(native.positive.spans[0].offset == 1);
  CHECK(native.positive.spans[0].length == 4);
  CHECK(native.positive.spans[1].offset == 3);
  CHECK(native.positive.spans[1].length == 1);
  CHECK(native.positive.deltas == std::vector<int64_t>{1, -1, 0, 2, -1});
  REQUIRE(h.to_prometheus(native, 0) == NativeExported::kExported);
  CHECK(native.positive.spans.size() == 3);
}

TEST_CASE("a scale below Prometheus' schema -4 has no Prometheus form") {
  kit::ExponentialHistogram h({3, 20, 0});
  h.observe(std::ldexp(1.0, -1000));
  h.observe(std::ldexp(1.0, 1000));
  REQUIRE(h.scale() < -4);
  kit::PrometheusNativeHistogram native;
  CHECK(h.to_prometheus(native) == NativeExported::kScaleBelowSchemaMinimum);
}

TEST_CASE("the classic form is cumulative at the bucket boundaries, ascending, without +Inf") {
  kit::ExponentialHistogram h({160, 0, 0.5});
  // Schema 0: -3 in [-4, -2), -1.5 in [-2, -1), 0.25 within the zero
  // threshold, 3 in (2, 4], 4 the top of (2, 4], 20 in (16, 32].
  for (const double v : {-3.0, -1.5, -1.5, 0.25, 3.0, 4.0, 20.0}) h.observe(v);
  std::vector<std::pair<double, uint64_t>> lines;
  kit::for_each_classic_bucket(
      h, [&](double le, uint64_t cumulative) { lines.emplace_back(le, cumulative); });
  const std::vector<std::pair<double, uint64_t>> expected{{-2, 1}, {-1, 3}, {0.5, 4}, {4, 6},
                                                          {8, 6},  {16, 6}, {32, 7}};
  CHECK(lines == expected);
}

TEST_CASE("the classic form leaves a boundary past the doubles to +Inf") {
  kit::ExponentialHistogram h({2, 0, 0});
  h.observe(std::ldexp(1.0, -1000));
  h.observe(std::ldexp(1.0, 1000), 2);
  REQUIRE(h.scale() == -10);  // buckets (2^-1024, 1] and (1, 2^1024]
  std::vector<std::pair<double, uint64_t>> lines;
  kit::for_each_classic_bucket(
      h, [&](double le, uint64_t cumulative) { lines.emplace_back(le, cumulative); });
  const std::vector<std::pair<double, uint64_t>> expected{{0, 0}, {1, 1}};  // +Inf: 3
  CHECK(lines == expected);
}

TEST_CASE("the classic form of any histogram has every le once, ascending, counts never falling") {
  // Random observations with the edge ones: subnormals (whose boundaries at
  // a fine scale round to one double), the extremes, both signs, zero.
  std::mt19937_64 random(GENERATE(1, 2, 3, 4, 5, 6, 7, 8));
  const uint32_t max_buckets = GENERATE(4u, 20u, 160u);
  kit::ExponentialHistogram h({max_buckets, 20, random() % 2 ? 0.0 : 1e-310});
  std::vector<std::pair<double, uint64_t>> observed;
  for (int i = 0; i < 200; ++i) {
    double value = 0;
    switch (random() % 5) {
      case 0:
        value = std::numeric_limits<double>::denorm_min() * static_cast<double>(random() % 9 + 1);
        break;
      case 1:
        value = std::ldexp(1.0, static_cast<int>(random() % 2100) - 1074);
        break;
      case 2:
        value = std::numeric_limits<double>::max();
        break;
      default:
        value = std::ldexp(1.0 + static_cast<double>(random() % 100) / 100,
                           static_cast<int>(random() % 20) - 10);
    }
    if (random() % 3 == 0) value = -value;
    const uint64_t weight = random() % 2 ? 1 : (uint64_t{1} << 62);
    if (h.observe(value, weight) == Observed::kAccepted) observed.emplace_back(value, weight);
  }
  std::vector<std::pair<double, uint64_t>> lines;
  kit::for_each_classic_bucket(
      h, [&](double le, uint64_t cumulative) { lines.emplace_back(le, cumulative); });
  REQUIRE(!lines.empty());
  for (std::size_t i = 1; i < lines.size(); ++i) {
    INFO("line " << i << " le " << lines[i].first);
    REQUIRE(lines[i].first > lines[i - 1].first);
    REQUIRE(lines[i].second >= lines[i - 1].second);
  }
  REQUIRE(lines.back().second <= h.count());
  // Saturated, never wrapped: the count is at least each weight it holds.
  for (const auto& [value, weight] : observed) REQUIRE(h.count() >= weight);
}

TEST_CASE("counts of 2^64 and more saturate, in observe, merge and the classic form") {
  kit::ExponentialHistogram h({8, 20, 0});
  const uint64_t half = uint64_t{1} << 63;
  h.observe(1.5, half);
  h.observe(1.5, half);
  h.observe(-1.5, half);
  CHECK(h.count() == UINT64_MAX);
  kit::ExponentialHistogram merged({8, 20, 0});
  kit::ExponentialPoint point;
  h.to_otlp(point);
  REQUIRE(merged.merge(point) == Merged::kMerged);
  REQUIRE(merged.merge(point) == Merged::kMerged);
  CHECK(merged.count() == UINT64_MAX);
  std::vector<uint64_t> cumulative;
  kit::for_each_classic_bucket(merged, [&](double, uint64_t c) { cumulative.push_back(c); });
  CHECK(cumulative.back() == UINT64_MAX);
  CHECK(kit::exponential_detail::saturated_count(0x1p64) == UINT64_MAX);
  CHECK(kit::exponential_detail::saturated_count(-0.0) == 0);
}

TEST_CASE("clear returns to an empty histogram at the maximum scale") {
  kit::ExponentialHistogram h({160, 12, 0});
  for (const double v : latencies(1000, 5)) h.observe(v);
  h.clear();
  CHECK(h.scale() == 12);
  CHECK(h.count() == 0);
  CHECK(h.positive().empty());
  CHECK(h.positive().total() == 0);
  h.observe(4.0);
  CHECK(counts_of(h.positive()) ==
        std::map<int32_t, uint64_t>{{kit::exponential_bucket_index(4.0, 12), 1}});
}

TEST_CASE("invalid options are refused with the reason") {
  CHECK_THROWS_WITH(kit::ExponentialHistogram({1, 20, 0}), Catch::Contains("max_buckets"));
  CHECK_THROWS_WITH(kit::ExponentialHistogram({160, 21, 0}), Catch::Contains("max_scale"));
  CHECK_THROWS_WITH(kit::ExponentialHistogram({160, 20, -1}), Catch::Contains("zero_threshold"));
  CHECK_THROWS_WITH(kit::ExponentialHistogram({160, 20, NAN}), Catch::Contains("zero_threshold"));
  CHECK(kit::exponential_options_error({}).empty());
}

TEST_CASE("observe allocates nothing once its bucket range exists") {
  const std::vector<double> values = latencies(20000, 6);
  kit::ExponentialHistogram h;
  for (const double v : values) h.observe(v);  // the range grows to its bound here
  tokenspeed::metrics::test::CountAllocations allocations;
  for (const double v : values) h.observe(v, 2);
  CHECK(allocations.count() == 0);
}

// The point's earlier name stays for plugins built against it, deprecated.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("the earlier name OtlpExponentialPoint is the ExponentialPoint") {
  STATIC_REQUIRE(std::is_same_v<kit::OtlpExponentialPoint, kit::ExponentialPoint>);
}
#pragma GCC diagnostic pop
