// exponential_property_test.cpp — the exponential (native) histogram from
// the record path to the scrape, over random histograms: random options
// (bucket budgets from 4 to 160, maximum scales from -2 to 20, zero
// thresholds), random values with the edge ones (subnormals, ±2^±1000, the
// largest double, zero, values at the zero threshold, NaN and infinities,
// both signs) and random weights up to 2^62 (counts that saturate), recorded
// by three processes' files. The launcher's merge of them equals the kit's
// own reference merge of the same observations (scale, counts, zero count,
// every bucket, the sum; counts past 2^53 to a double's precision, as the
// files keep them), and the text exposition of its classic form passes
// promtool: every le once, ascending, cumulative counts never falling, +Inf
// equal to the count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/exponential_slots.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;
constexpr int kProcesses = 3;

double random_value(std::mt19937_64& random, double zero_threshold) {
  std::uniform_real_distribution<double> unit(0, 1);
  const double sign = unit(random) < 0.25 ? -1 : 1;
  const double pick = unit(random);
  if (pick < 0.10)
    return sign * std::numeric_limits<double>::denorm_min() *
           static_cast<double>(1 + random() % 4096);
  if (pick < 0.20)
    return sign * std::ldexp(1 + unit(random), 900 + static_cast<int>(random() % 124));
  if (pick < 0.25)
    return sign * std::ldexp(1 + unit(random), -1000 - static_cast<int>(random() % 22));
  if (pick < 0.28) return sign * std::numeric_limits<double>::max();
  if (pick < 0.31) return 0.0;
  if (pick < 0.34) return sign * zero_threshold;
  if (pick < 0.36) return sign * std::nextafter(zero_threshold, 1.0);
  if (pick < 0.37) return std::numeric_limits<double>::quiet_NaN();
  if (pick < 0.38) return sign * std::numeric_limits<double>::infinity();
  return sign * std::exp(std::normal_distribution<double>(0, 3)(random));
}

std::uint64_t random_weight(std::mt19937_64& random) {
  const std::uint64_t pick = random() % 100;
  if (pick < 70) return 1;
  if (pick < 90) return 1 + random() % 1000;
  if (pick < 98) return 1 + random() % (std::uint64_t{1} << 40);
  return std::uint64_t{1} << 62;
}

ExponentialHistogramOptions random_options(std::mt19937_64& random) {
  static constexpr std::uint32_t kBuckets[] = {4, 8, 20, 160};
  static constexpr double kZeroThresholds[] = {0, 1e-300, 0.5};
  ExponentialHistogramOptions options;
  options.max_buckets = kBuckets[random() % 4];
  options.max_scale = -2 + static_cast<std::int32_t>(random() % 23);
  options.zero_threshold = kZeroThresholds[random() % 3];
  return options;
}

// What promtool says of text; "" when it accepts it, or when promtool is not
// installed (the CI installs it with Prometheus).
std::string promtool_problems(const std::string& text, const std::filesystem::path& dir) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) {
    WARN("promtool not installed: the text is not checked by it");
    return "";
  }
  const std::filesystem::path in = dir / "exposition.txt";
  const std::filesystem::path out = dir / "promtool.txt";
  std::FILE* file = std::fopen(in.c_str(), "w");
  REQUIRE(file != nullptr);
  std::fwrite(text.data(), 1, text.size(), file);
  std::fclose(file);
  const int status = std::system(
      ("promtool check metrics < " + in.string() + " > " + out.string() + " 2>&1").c_str());
  std::FILE* said = std::fopen(out.c_str(), "r");
  std::string problems;
  char buffer[4096];
  for (std::size_t n; said != nullptr && (n = std::fread(buffer, 1, sizeof buffer, said)) > 0;)
    problems.append(buffer, n);
  if (said != nullptr) std::fclose(said);
  return status == 0 ? "" : problems.empty() ? "exit status " + std::to_string(status) : problems;
}

// The slots keep counts as doubles (as prometheus_client's files do):
// exact below 2^53, within a rounding per addition above, held at the
// largest uint64 past 2^64. The kit counts in integers.
bool same_count(std::uint64_t got, std::uint64_t expected) {
  constexpr std::uint64_t kExact = std::uint64_t{1} << 53;
  if (got < kExact || expected < kExact) return got == expected;
  const double difference = std::fabs(static_cast<double>(got) - static_cast<double>(expected));
  return difference <= 1e-12 * static_cast<double>(expected);
}

bool same_counts(const std::vector<std::uint64_t>& got,
                 const std::vector<std::uint64_t>& expected) {
  if (got.size() != expected.size()) return false;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!same_count(got[i], expected[i])) return false;
  return true;
}

bool same_sum(double got, double expected) {
  if (std::isnan(expected)) return std::isnan(got);
  if (std::isinf(expected)) return got == expected;
  return got == Approx(expected).epsilon(1e-9).margin(1e-300);
}

}  // namespace

TEST_CASE("random exponential histograms of three processes: the scrape is the kit's merge") {
  std::mt19937_64 random(0x7e57'2026);
  int saturated = 0;
  int not_finite_rounds = 0;
  for (int round = 0; round < 40; ++round) {
    MetricDefinition metric{"x", MetricKind::histogram, "Random values.", "", {"rank"},
                            {},  GaugeMode::livemax};
    metric.exponential = random_options(random);
    metric = checked_definition(metric);
    const ExponentialHistogramOptions& options = *metric.exponential;
    const kit::ExponentialHistogramOptions kit_options{options.max_buckets, options.max_scale,
                                                       options.zero_threshold};
    INFO("round " << round << ": max_buckets " << options.max_buckets << ", max_scale "
                  << options.max_scale << ", zero_threshold " << options.zero_threshold);
    const TempDir dir;
    kit::ExponentialHistogram reference(kit_options);
    std::uint64_t not_finite = 0;
    {
      std::vector<std::unique_ptr<MultiprocessMetricStore>> processes;
      for (int p = 0; p < kProcesses; ++p) {
        MultiprocessStoreOptions store_options{dir.path()};
        store_options.file_prefix = "producer" + std::to_string(p);  // one file each
        processes.push_back(std::make_unique<MultiprocessMetricStore>(store_options));
        double* slots = processes.back()->allocate_series(metric, std::vector<std::string>{"0"});
        kit::ExponentialHistogram own(kit_options);
        const int observations = static_cast<int>(random() % 60);
        for (int i = 0; i < observations; ++i) {
          const double value = random_value(random, options.zero_threshold);
          const std::uint64_t weight = random_weight(random);
          observe_exponential(slots, options, value, weight, value * static_cast<double>(weight));
          if (own.observe(value, weight) == kit::ExponentialHistogram::Observed::kNotFinite)
            not_finite += weight;
        }
        REQUIRE(reference.merge(own) == kit::ExponentialHistogram::Merged::kMerged);
      }
      ScrapeSources sources;
      sources.run_dir = dir.path();
      const std::vector<MergedFamily> families = merge_scrape(sources);
      const auto family = std::find_if(families.begin(), families.end(),
                                       [](const MergedFamily& f) { return f.metric->name == "x"; });
      REQUIRE(family != families.end());
      REQUIRE(family->series.size() == 1);
      const kit::ExponentialHistogram& got = *family->series.front().exponential;
      kit::ExponentialPoint got_point, expected_point;
      got.to_otlp(got_point);
      reference.to_otlp(expected_point);
      CHECK(got_point.scale == expected_point.scale);
      CHECK(same_count(got_point.count, expected_point.count));
      CHECK(same_count(got_point.zero_count, expected_point.zero_count));
      CHECK(got_point.positive.offset == expected_point.positive.offset);
      CHECK(same_counts(got_point.positive.bucket_counts, expected_point.positive.bucket_counts));
      CHECK(got_point.negative.offset == expected_point.negative.offset);
      CHECK(same_counts(got_point.negative.bucket_counts, expected_point.negative.bucket_counts));
      CHECK(same_sum(got_point.sum, expected_point.sum));
      saturated += expected_point.count == UINT64_MAX ? 1 : 0;
      not_finite_rounds += not_finite > 0 ? 1 : 0;

      const std::string text = render_exposition(families);
      INFO(text);
      CHECK(promtool_problems(text, dir.path()) == "");
    }
  }
  // The edges were met: counts past 2^64, and NaN or infinities refused.
  CHECK(saturated > 0);
  CHECK(not_finite_rounds > 0);
}
