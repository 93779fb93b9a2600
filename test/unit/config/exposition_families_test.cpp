// exposition_families_test.cpp — a saved /metrics read into its families:
// prometheus_client's real text (format 0.0.4 and OpenMetrics), counters and
// their _total, histogram buckets, escaped help, the union of labels, what is
// left out with a note, a malformed line named by its number, and every byte
// prefix of a valid text read or refused with a StartupError.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/exposition_families.hpp"
#include "core/startup_error.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

// prometheus_client 0.16's generate_latest() (Debian's python3-prometheus-client)
// of a histogram with labels and one observation, a counter, a gauge, a
// summary whose help has a quote, a backslash and a newline, and a histogram
// with labels and no child yet.
constexpr const char* kPrometheusClientText =
    R"(# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.005",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.01",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.02",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.04",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.06",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.08",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.25",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_count{model_name="llama"} 1.0
vllm:time_to_first_token_seconds_sum{model_name="llama"} 0.03
# HELP vllm:time_to_first_token_seconds_created Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds_created gauge
vllm:time_to_first_token_seconds_created{model_name="llama"} 1.796618503201017e+09
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="llama"} 7.0
# HELP vllm:prompt_tokens_created Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_created gauge
vllm:prompt_tokens_created{model_name="llama"} 1.7966185032011173e+09
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama"} 3.0
# HELP engine_step_seconds Step "time"\\ with a backslash\nand a newline.
# TYPE engine_step_seconds summary
engine_step_seconds_count 1.0
engine_step_seconds_sum 0.2
# HELP engine_step_seconds_created Step "time"\\ with a backslash\nand a newline.
# TYPE engine_step_seconds_created gauge
engine_step_seconds_created 1.796618503201156e+09
# HELP vllm:e2e_request_latency_seconds Unobserved.
# TYPE vllm:e2e_request_latency_seconds histogram
)";

// The same registry through prometheus_client's OpenMetrics generate_latest().
constexpr const char* kOpenMetricsText =
    R"(# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="llama"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.04",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.5",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="llama"} 1.0
vllm:time_to_first_token_seconds_count{model_name="llama"} 1.0
vllm:time_to_first_token_seconds_sum{model_name="llama"} 0.03
vllm:time_to_first_token_seconds_created{model_name="llama"} 1.7966185047003484e+09
# HELP vllm:prompt_tokens Number of prefill tokens processed.
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{model_name="llama"} 7.0 # {trace_id="a"} 1.0 1.7966185e+09
vllm:prompt_tokens_created{model_name="llama"} 1.796618504700429e+09
# HELP engine_step_seconds Step \"time\"\\ with a backslash\nand a newline.
# TYPE engine_step_seconds summary
# UNIT engine_step_seconds seconds
engine_step_seconds_count 1.0
engine_step_seconds_sum 0.2
engine_step_seconds_created 1.7966185047004952e+09
# EOF
)";

// Series of one family with different labels, buckets out of order and
// repeated, a summary's quantiles, timestamps, escapes and blanks.
constexpr const char* kLabelsText =
    "# TYPE jobs counter\n"
    "jobs_total{queue=\"a\"} 1 1700000000000\n"
    "jobs_total{ queue = \"b\\\"}\" , priority=\"high\", } 2\n"
    "jobs_total{zone=\"x\\\\\",queue=\"c\"} -Inf\n"
    "\n"
    "# TYPE latency histogram\n"
    "latency_bucket{le=\"1\",route=\"/a\"} 1\n"
    "latency_bucket{le=\"+Inf\",route=\"/a\"} 1\n"
    "latency_bucket{method=\"GET\",le=\"0.5\",route=\"/b\"} 0\n"
    "latency_bucket{method=\"GET\",le=\"1.0\",route=\"/b\"} 2\n"
    "latency_bucket{method=\"GET\",le=\"1e-1\",route=\"/b\"} 0\n"
    "latency_sum{route=\"/a\"} 0.7\n"
    "latency_count{route=\"/a\"} 1\n"
    "# TYPE rpc summary\n"
    "rpc{quantile=\"0.5\",service=\"s\"} NaN\n"
    "rpc_sum{service=\"s\"} 3\n"
    "rpc_count{service=\"s\"} 1\n";

ExpositionFamilies read(const std::string& text) {
  return exposition_families_from_text(text, "engine-metrics.txt");
}

const MetricDefinition* family(const ExpositionFamilies& read, const std::string& name) {
  for (const MetricDefinition& definition : read.families) {
    if (definition.name == name) return &definition;
  }
  return nullptr;
}

// The key a refused text is reported under ("line N"), its message checked.
std::string refused_line(const std::string& text, const std::string& message) {
  try {
    read(text);
  } catch (const StartupError& error) {
    CHECK(error.file() == "engine-metrics.txt");
    CHECK_THAT(error.message(), Catch::Contains(message));
    CHECK(std::string(error.what()).find('\n') == std::string::npos);
    return error.key();
  }
  FAIL("accepted: " << text);
  return "";
}

}  // namespace

TEST_CASE("prometheus_client's text reads as its families, counters without _total") {
  const ExpositionFamilies got = read(kPrometheusClientText);
  CHECK(got.file == "engine-metrics.txt");
  REQUIRE(got.families.size() == 5);  // the _created gauge families are not families
  CHECK(got.families[0].name == "vllm:time_to_first_token_seconds");
  CHECK(got.families[1].name == "vllm:prompt_tokens");
  CHECK(got.families[2].name == "vllm:num_requests_running");
  CHECK(got.families[3].name == "engine_step_seconds");
  CHECK(got.families[4].name == "vllm:e2e_request_latency_seconds");

  const MetricDefinition& ttft = got.families[0];
  CHECK(ttft.kind == MetricKind::histogram);
  CHECK(ttft.help == "Histogram of time to first token in seconds.");
  CHECK(ttft.label_names == std::vector<std::string>{"model_name"});
  CHECK(ttft.buckets ==
        std::vector<double>{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5});
  CHECK_FALSE(ttft.exponential);

  const MetricDefinition& tokens = got.families[1];
  CHECK(tokens.kind == MetricKind::counter);
  CHECK(tokens.sample_name() == "vllm:prompt_tokens_total");
  CHECK(tokens.help == "Number of prefill tokens processed.");
  CHECK(tokens.label_names == std::vector<std::string>{"model_name"});
  CHECK(got.families[2].kind == MetricKind::gauge);

  const MetricDefinition& step = got.families[3];
  CHECK(step.kind == MetricKind::summary);
  CHECK(step.help == "Step \"time\"\\ with a backslash\nand a newline.");
  CHECK(step.label_names.empty());

  // The histogram without a child has no samples: noted, with its line.
  REQUIRE(got.notes.size() == 1);
  CHECK_THAT(got.notes[0], Catch::Contains("file 'engine-metrics.txt': key 'line 36'"));
  CHECK_THAT(got.notes[0], Catch::Contains("'vllm:e2e_request_latency_seconds' has no samples"));
}

TEST_CASE("OpenMetrics text reads as the same families, _created, UNIT and exemplars ignored") {
  const ExpositionFamilies got = read(kOpenMetricsText);
  REQUIRE(got.families.size() == 3);
  CHECK(got.families[0].buckets == std::vector<double>{0.001, 0.04, 0.5});
  CHECK(got.families[1].name == "vllm:prompt_tokens");
  CHECK(got.families[1].kind == MetricKind::counter);
  CHECK(got.families[1].label_names == std::vector<std::string>{"model_name"});
  CHECK(got.families[2].help == "Step \"time\"\\ with a backslash\nand a newline.");
  CHECK(got.notes.empty());
  CHECK(refused_line(std::string(kOpenMetricsText) + "up 1\n", "after '# EOF'") == "line 21");
}

TEST_CASE("a family's labels are the union of its samples' in order of first appearance") {
  const ExpositionFamilies got = read(kLabelsText);
  REQUIRE(got.families.size() == 3);
  const MetricDefinition* jobs = family(got, "jobs");
  REQUIRE(jobs != nullptr);
  CHECK(jobs->label_names == std::vector<std::string>{"queue", "priority", "zone"});
  const MetricDefinition* latency = family(got, "latency");
  REQUIRE(latency != nullptr);
  CHECK(latency->label_names == std::vector<std::string>{"route", "method"});
  // The distinct finite bounds, ascending ("1" and "1.0" are one bound).
  CHECK(latency->buckets == std::vector<double>{0.1, 0.5, 1.0});
  const MetricDefinition* rpc = family(got, "rpc");
  REQUIRE(rpc != nullptr);
  CHECK(rpc->kind == MetricKind::summary);
  CHECK(rpc->label_names == std::vector<std::string>{"service"});
}

TEST_CASE("untyped families and kinds the host does not record are left out with a note") {
  const ExpositionFamilies got = read(
      "# HELP free_form No type line.\n"
      "free_form 1\n"
      "# TYPE legacy untyped\n"
      "legacy 2\n"
      "# TYPE build info\n"
      "build_info{version=\"1\"} 1\n"
      "# TYPE up gauge\n"
      "up 1\n");
  REQUIRE(got.families.size() == 1);
  CHECK(got.families[0].name == "up");
  REQUIRE(got.notes.size() == 3);
  CHECK_THAT(got.notes[0], Catch::Contains("key 'line 1'"));
  CHECK_THAT(got.notes[0], Catch::Contains("'free_form' has no # TYPE line"));
  CHECK_THAT(got.notes[1], Catch::Contains("key 'line 3'"));
  CHECK_THAT(got.notes[1], Catch::Contains("'legacy' is of type untyped"));
  CHECK_THAT(got.notes[2], Catch::Contains("'build' is of type info"));
}

TEST_CASE("a malformed line is refused, naming the file and its line number") {
  CHECK(refused_line("# TYPE up gauge\nup\n", "without a value") == "line 2");
  CHECK(refused_line("# TYPE up gauge\n\nup 1\nup{a=\"1} 2\n", "unterminated") == "line 4");
  CHECK(refused_line("up{a=1} 1\n", "expected '\"'") == "line 1");
  CHECK(refused_line("up{a=\"1\" b=\"2\"} 1\n", "expected ',' or '}'") == "line 1");
  CHECK(refused_line("up{a=\"1\",a=\"2\"} 1\n", "'a' is repeated") == "line 1");
  CHECK(refused_line("up one\n", "'one' is not a sample value") == "line 1");
  CHECK(refused_line("up 1 later\n", "'later' is not a timestamp") == "line 1");
  CHECK(refused_line("up 1 2 3\n", "after the sample's timestamp") == "line 1");
  CHECK(refused_line("up-time 1\n", "not part of a metric name") == "line 1");
  CHECK(refused_line("9up 1\n", "neither a comment nor a sample") == "line 1");
  CHECK(refused_line("# TYPE up gauge\n# TYPE up gauge\n", "a second # TYPE") == "line 2");
  CHECK(refused_line("# HELP up a\n# HELP up b\n", "a second # HELP") == "line 2");
  CHECK(refused_line("# TYPE up timer\n", "'timer' is not a type") == "line 1");
  CHECK(refused_line("# TYPE up\n", "without a type") == "line 1");
  CHECK(refused_line("# TYPE up gauge x\n", "text after the type") == "line 1");
  CHECK(refused_line("# HELP\n", "without a metric name") == "line 1");
  CHECK(refused_line("# TYPE 1up gauge\n", "is not a metric name") == "line 1");
  CHECK(refused_line("up 1\n# TYPE up gauge\n", "follows its samples") == "line 2");
  CHECK(refused_line("# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", "not a number") == "line 2");
  CHECK(refused_line("# TYPE h histogram\nh_bucket{a=\"x\"} 1\n", "without 'le'") == "line 2");
  CHECK(refused_line("# TYPE h_count gauge\n# TYPE h histogram\n", "is also 'h_count'") ==
        "line 2");
  // A family its definition's checks refuse is named at its TYPE line.
  CHECK(refused_line("# TYPE up gauge\nup{__x=\"1\"} 1\n", "reserved") == "line 1");
  CHECK(refused_line("# TYPE up gauge\nup 1\n# EOF\nup 2\n", "after '# EOF'") == "line 4");
}

TEST_CASE("every byte prefix of a valid exposition reads or is refused with a StartupError") {
  for (const std::string& text : {std::string(kPrometheusClientText), std::string(kOpenMetricsText),
                                  std::string(kLabelsText)}) {
    std::size_t read_whole = 0;
    std::size_t refused = 0;
    for (std::size_t size = 0; size <= text.size(); ++size) {
      try {
        static_cast<void>(read(text.substr(0, size)));
        ++read_whole;
      } catch (const StartupError& error) {
        ++refused;
        CHECK_THAT(error.key(), Catch::StartsWith("line "));
      } catch (const std::exception& error) {
        FAIL("prefix of " << size << " bytes: " << error.what());
      } catch (...) {
        FAIL("prefix of " << size << " bytes: an exception that is not a std::exception");
      }
    }
    CHECK(read_whole + refused == text.size() + 1);
    CHECK(read_whole > 0);
    CHECK(refused > 0);
  }
}

TEST_CASE("an exposition file is read; one that cannot be read names the file and the flag") {
  const test::TempDir dir("tsm-exposition");
  const std::string path = dir.write("metrics.txt", kPrometheusClientText);
  const ExpositionFamilies got = read_exposition_families(path, "--engine-metrics");
  CHECK(got.file == path);
  CHECK(got.families.size() == 5);
  for (const std::string& bad : {dir.str(), dir.str() + "/absent.txt"}) {
    try {
      read_exposition_families(bad, "--engine-metrics");
      FAIL("read: " << bad);
    } catch (const StartupError& error) {
      CHECK(error.file() == bad);
      CHECK(error.key() == "--engine-metrics");
      CHECK_THAT(error.message(), Catch::StartsWith("the exposition "));
    }
  }
}
