// The statsd output's line grammar: names, tags, numbers, the DogStatsD
// sample rate that carries a weight exactly.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "statsd_format.hpp"
#include "statsd_socket.hpp"

using namespace tokenspeed::metrics::statsd;

namespace {

const char* const kNames[] = {"model_name", "dp_rank"};
const char* const kValues[] = {"llama-3:8b", "0"};

LabelView two_labels() {
  LabelView labels;
  labels.count = 2;
  labels.names = kNames;
  labels.values = kValues;
  return labels;
}

std::string line(Flavour flavour, LineType type, double value, uint64_t weight,
                 std::string prefix = "") {
  FormatOptions options;
  options.flavour = flavour;
  options.prefix = std::move(prefix);
  std::string out;
  append_line(out, options, "tokenspeed:ttft_seconds", two_labels(), type, value, weight);
  return out;
}

}  // namespace

TEST_CASE(
    "a DogStatsD sample rate of 1/weight rounded down makes the agent's int(1/rate) the weight",
    "[statsd]") {
  // The agent reads the printed rate back and counts int(1 / rate) samples.
  uint64_t wrong = 0;
  for (uint64_t weight = 2; weight <= 100000; ++weight) {
    std::string text;
    append_number(text, sample_rate_for_weight(weight));
    const double rate = std::strtod(text.c_str(), nullptr);
    const auto counted = static_cast<uint64_t>(1.0 / rate);
    if (counted != weight) ++wrong;
    REQUIRE(rate > 0);
    REQUIRE(rate < 1);
  }
  CHECK(wrong == 0);
}

TEST_CASE("the plain rate 1/weight would lose one for many weights (why the rate is rounded down)",
          "[statsd]") {
  uint64_t lost = 0;
  for (uint64_t weight = 2; weight <= 100000; ++weight) {
    std::string text;
    append_number(text, 1.0 / static_cast<double>(weight));
    if (static_cast<uint64_t>(1.0 / std::strtod(text.c_str(), nullptr)) != weight) ++lost;
  }
  CHECK(lost > 0);
}

TEST_CASE("DogStatsD lines carry labels as tags and weights as a sample rate", "[statsd]") {
  CHECK(line(Flavour::kDogstatsd, LineType::kDistribution, 0.25, 1) ==
        "tokenspeed.ttft_seconds:0.25|d|#model_name:llama-3:8b,dp_rank:0");
  const std::string weighted = line(Flavour::kDogstatsd, LineType::kDistribution, 0.25, 3);
  CHECK(weighted.rfind("tokenspeed.ttft_seconds:0.25|d|@0.333333333333333", 0) == 0);
  CHECK(weighted.find("|#model_name:llama-3:8b,dp_rank:0") != std::string::npos);
  CHECK(line(Flavour::kDogstatsd, LineType::kCounter, 3, 1, "svc") ==
        "svc.tokenspeed.ttft_seconds:3|c|#model_name:llama-3:8b,dp_rank:0");
  CHECK(line(Flavour::kDogstatsd, LineType::kGauge, -2.5, 1) ==
        "tokenspeed.ttft_seconds:-2.5|g|#model_name:llama-3:8b,dp_rank:0");
}

TEST_CASE("plain StatsD lines carry labels as name segments and weights as repeated values",
          "[statsd]") {
  CHECK(line(Flavour::kStatsd, LineType::kTimer, 250, 3, "svc.") ==
        "svc.tokenspeed.ttft_seconds.model_name.llama-3_8b.dp_rank.0:250|ms:250|ms:250|ms");
  CHECK(line(Flavour::kStatsd, LineType::kCounter, 0.5, 1) ==
        "tokenspeed.ttft_seconds.model_name.llama-3_8b.dp_rank.0:0.5|c");
}

TEST_CASE("a negative plain StatsD gauge is set through zero, not sent as a relative change",
          "[statsd]") {
  CHECK(line(Flavour::kStatsd, LineType::kGauge, -4, 1) ==
        "tokenspeed.ttft_seconds.model_name.llama-3_8b.dp_rank.0:0|g\n"
        "tokenspeed.ttft_seconds.model_name.llama-3_8b.dp_rank.0:-4|g");
}

TEST_CASE("tag text that would break the grammar is replaced", "[statsd]") {
  const char* const names[] = {"a:b|c"};
  const char* const values[] = {"x,y|z#\n:ok"};
  LabelView labels;
  labels.count = 1;
  labels.names = names;
  labels.values = values;
  std::string out;
  append_tags(out, labels);
  CHECK(out == "|#a_b_c:x_y_z__:ok");
}

TEST_CASE("process tags follow the event's own tags, sanitized like them", "[statsd]") {
  FormatOptions options;
  options.flavour = Flavour::kDogstatsd;
  options.constant_tags = identity_tags("scheduler-0", "gpu|7,a");
  CHECK(options.constant_tags == "process:scheduler-0,node:gpu_7_a");
  const char* const names[] = {"model"};
  const char* const values[] = {"llama"};
  LabelView labels;
  labels.count = 1;
  labels.names = names;
  labels.values = values;
  std::string out;
  append_line(out, options, "requests", labels, LineType::kCounter, 2, 1);
  CHECK(out == "requests:2|c|#model:llama,process:scheduler-0,node:gpu_7_a");
  out.clear();
  append_line(out, options, "requests", LabelView{}, LineType::kCounter, 2, 1);
  CHECK(out == "requests:2|c|#process:scheduler-0,node:gpu_7_a");
}

TEST_CASE("numbers are printed to read back exactly", "[statsd]") {
  for (const double v : {0.1, 1e-9, 123456789.123, 1.0 / 3.0, 5e300}) {
    std::string text;
    append_number(text, v);
    CHECK(std::strtod(text.c_str(), nullptr) == v);
  }
}

TEST_CASE("addresses are host:port, [v6]:port or unix:///path", "[statsd]") {
  CHECK(parse_address("localhost:8125").host == "localhost");
  CHECK(parse_address("[::1]:8125").host == "::1");
  CHECK(parse_address("unix:///run/dsd.sock").path == "/run/dsd.sock");
  CHECK_THROWS_WITH(parse_address("localhost"), Catch::Contains("host:port"));
  CHECK_THROWS_WITH(parse_address("localhost:99999"), Catch::Contains("1 to 65535"));
  CHECK_THROWS_WITH(parse_address("unix://relative"), Catch::Contains("absolute path"));
}

TEST_CASE("a capped family's empty overflow label is written nowhere; the overflow series' is",
          "[statsd]") {
  const char* const names[] = {"lora", TSM_OVERFLOW_LABEL};
  const char* const own[] = {"a", ""};
  const char* const overflow[] = {"", "true"};
  const auto line_of = [&](Flavour flavour, const char* const* values, std::string tags) {
    FormatOptions options;
    options.flavour = flavour;
    options.constant_tags = std::move(tags);
    LabelView labels;
    labels.count = 2;
    labels.names = names;
    labels.values = values;
    std::string out;
    append_line(out, options, "requests", labels, LineType::kCounter, 2, 1);
    return out;
  };
  CHECK(line_of(Flavour::kDogstatsd, own, "") == "requests:2|c|#lora:a");
  CHECK(line_of(Flavour::kDogstatsd, own, "process:p") == "requests:2|c|#lora:a,process:p");
  CHECK(line_of(Flavour::kDogstatsd, overflow, "") ==
        "requests:2|c|#lora:,otel_metric_overflow:true");
  CHECK(line_of(Flavour::kStatsd, own, "") == "requests.lora.a:2|c");
  const char* const only_marker[] = {TSM_OVERFLOW_LABEL};
  const char* const empty[] = {""};
  LabelView marker_only;
  marker_only.count = 1;
  marker_only.names = only_marker;
  marker_only.values = empty;
  std::string out;
  FormatOptions options;
  options.flavour = Flavour::kDogstatsd;
  options.constant_tags = "process:p";
  append_line(out, options, "requests", marker_only, LineType::kCounter, 2, 1);
  CHECK(out == "requests:2|c|#process:p");
}
