// metric_definition_test.cpp — unit tests of the messages of
// host/core/metric_definition's checks: what the engine gave is quoted,
// cut when it is long.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include "tokenspeed/metrics/metric_definition.hpp"

using namespace tokenspeed::metrics;

namespace {

std::string rejection(const MetricDefinition& definition) {
  try {
    (void)checked_definition(definition);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return {};
}

}  // namespace

TEST_CASE("a short invalid metric name is quoted whole") {
  const MetricDefinition bad{"bad-name", MetricKind::counter, "", "", {}, {}, {}};
  CHECK(rejection(bad) ==
        "metric 'bad-name': not a valid metric name (letters, digits, '_' and ':', not starting "
        "with a digit)");
}

TEST_CASE("a 2 MB metric name is cut to its start and its size in the error") {
  const std::string name = std::string(2'000'000, 'm') + "-";
  const MetricDefinition bad{name, MetricKind::gauge, "", "", {}, {}, {}};
  const std::string message = rejection(bad);
  CHECK(message.starts_with("metric '" + std::string(120, 'm') + "... (2000001 bytes)': "));
  CHECK(message.size() < 400);
}

TEST_CASE("a 2 MB label name is cut in the error") {
  const std::string label = std::string(2'000'000, 'l') + "-";
  const MetricDefinition bad{"tokenspeed:x", MetricKind::gauge, "", "", {label}, {}, {}};
  const std::string message = rejection(bad);
  CHECK(message.starts_with("metric 'tokenspeed:x': label name '" + std::string(120, 'l') +
                            "... (2000001 bytes)' is not valid"));
  CHECK(message.size() < 400);
}

TEST_CASE("a summary takes no buckets and reserves the label name quantile") {
  const MetricDefinition summary{"s", MetricKind::summary, "", "", {"model"}, {}, {}};
  CHECK(rejection(summary).empty());
  MetricDefinition with_buckets = summary;
  with_buckets.buckets = {1.0};
  CHECK(rejection(with_buckets) ==
        "metric 's': a summary has no buckets (it exposes a count and a sum)");
  MetricDefinition quantile = summary;
  quantile.label_names = {"quantile"};
  CHECK(rejection(quantile) == "metric 's': label name 'quantile' is reserved for summaries");
  CHECK(to_string(MetricKind::summary) == "summary");
}

TEST_CASE("every gauge mode of prometheus_client is named both ways") {
  for (const char* name : {"all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum",
                           "mostrecent", "livemostrecent"}) {
    INFO(name);
    GaugeMode mode = GaugeMode::livemax;
    REQUIRE(gauge_mode_from_string(name, mode));
    CHECK(to_string(mode) == name);
  }
  GaugeMode mode = GaugeMode::livemax;
  CHECK_FALSE(gauge_mode_from_string("latest", mode));
}
