// metric_views_test.cpp — the views file read strictly (each mistake names
// the file and the key), and views applied to definitions: selection by name,
// glob and kind, buckets, exponential and back, rename and help, labels kept
// or dropped, outputs, drop, and what check prints.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/metric_views.hpp"
#include "core/startup_error.hpp"
#include "core/strict_json.hpp"

using namespace tokenspeed::metrics;

namespace {

MetricViews views_of(const std::string& text) {
  return metric_views_from_json(parse_strict_json(text), "views.json");
}

// The key a refused views text is reported under.
std::string refused_key(const std::string& text) {
  try {
    views_of(text);
  } catch (const StartupError& error) {
    CHECK(error.file() == "views.json");
    return error.key();
  }
  FAIL("accepted: " << text);
  return "";
}

const MetricDefinition kTtft{"tokenspeed:time_to_first_token_seconds",
                             MetricKind::histogram,
                             "TTFT",
                             "seconds",
                             {"model", "request_id"},
                             {0.3, 1.0, 5.0},
                             {}};
const MetricDefinition kTokens{
    "tokenspeed:prompt_tokens_total", MetricKind::counter, "Prompt tokens", "", {"model"}, {}, {}};

}  // namespace

TEST_CASE("a views file refuses unknown keys, wrong types and bad values, naming the key") {
  CHECK(refused_key(R"({"view": []})") == "view");
  CHECK(refused_key(R"({"views": {}})") == "views");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "bucket": [1]}]})") ==
        "views[0].bucket");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a", "kind": "timer"}}]})") ==
        "views[0].select.kind");
  CHECK(refused_key(R"({"views": [{"select": {}}]})") == "views[0].select.name");
  CHECK(refused_key(R"({"views": [{}]})") == "views[0].select");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "buckets": [1, 1]}]})") ==
        "views[0].buckets[1]");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "buckets": ["1"]}]})") ==
        "views[0].buckets[0]");
  CHECK(
      refused_key(R"({"views": [{"select": {"name": "a"}, "exponential": {"max_scale": 21}}]})") ==
      "views[0].exponential.max_scale");
  CHECK(
      refused_key(
          R"({"views": [{"select": {"name": "a"}, "aggregation": "exponential", "buckets": [1]}]})") ==
      "views[0].buckets");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "name": "1bad"}]})") ==
        "views[0].name");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a*"}, "name": "b"}]})") == "views[0].name");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "drop_labels": ["le x"]}]})") ==
        "views[0].drop_labels");
  CHECK(refused_key(
            R"({"views": [{"select": {"name": "a"}, "keep_labels": [], "drop_labels": []}]})") ==
        "views[0].drop_labels");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "drop": "yes"}]})") == "views[0].drop");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "outputs": "otlp"}]})") ==
        "views[0].outputs");
  CHECK(
      refused_key(R"({"views": [{"select": {"name": "a", "kind": "counter"}, "buckets": [1]}]})") ==
      "views[0].select.kind");
}

TEST_CASE("a views file with a duplicate key is refused naming the file and the key") {
  const auto path = std::filesystem::temp_directory_path() / "tsm_metric_views_test.json";
  std::ofstream(path) << R"({"views": [{"select": {"name": "a", "name": "b"}}]})";
  try {
    read_metric_views(path.string());
    FAIL("accepted a duplicate key");
  } catch (const StartupError& error) {
    CHECK(error.file() == path.string());
    CHECK(error.key() == "views[0].select.name");
  }
  std::filesystem::remove(path);
  CHECK_THROWS_AS(read_metric_views(path.string()), StartupError);  // missing file
}

TEST_CASE("a view selects by exact name, glob and kind; a counter by its name without _total") {
  const MetricViews views = views_of(R"({"views": [
      {"select": {"name": "tokenspeed:time_to_first_token_seconds"}},
      {"select": {"name": "tokenspeed:*_seconds", "kind": "histogram"}},
      {"select": {"name": "tokenspeed:*", "kind": "gauge"}},
      {"select": {"name": "tokenspeed:prompt_tokens"}},
      {"select": {"name": "tokenspeed:prompt_tokens_total"}},
      {"select": {"name": "tokenspeed:?rompt*"}}]})");
  CHECK(view_selects(views.views[0], kTtft));
  CHECK(view_selects(views.views[1], kTtft));
  CHECK_FALSE(view_selects(views.views[2], kTtft));
  CHECK(view_selects(views.views[3], kTokens));
  CHECK_FALSE(view_selects(views.views[4], kTokens));
  CHECK(view_selects(views.views[5], kTokens));
  CHECK_FALSE(view_selects(views.views[5], kTtft));
}

TEST_CASE("views change a histogram's buckets, aggregation, name and help") {
  const ViewedDefinition classic = apply_views(
      views_of(R"({"views": [{"select": {"name": "tokenspeed:time_to_first_token_seconds"},
          "buckets": [0.01, 0.025, 0.05, 0.1], "name": "ttft_seconds", "help": "first token"}]})"),
      kTtft);
  CHECK(classic.definition.buckets == std::vector<double>{0.01, 0.025, 0.05, 0.1});
  CHECK(classic.definition.name == "ttft_seconds");
  CHECK(classic.definition.help == "first token");
  CHECK_FALSE(classic.dropped);

  const ViewedDefinition exponential =
      apply_views(views_of(R"({"views": [{"select": {"name": "*", "kind": "histogram"},
          "exponential": {"max_scale": 3, "max_buckets": 40}}]})"),
                  kTtft);
  REQUIRE(exponential.definition.exponential);
  CHECK(exponential.definition.exponential->max_scale == 3);
  CHECK(exponential.definition.exponential->max_buckets == 40);
  CHECK(checked_definition(exponential.definition).exponential);

  MetricDefinition native = kTtft;
  native.exponential = ExponentialHistogramOptions{};
  native.buckets.clear();
  const ViewedDefinition back = apply_views(
      views_of(R"({"views": [{"select": {"name": "*"}, "aggregation": "classic"}]})"), native);
  CHECK_FALSE(back.definition.exponential);
  CHECK(checked_definition(back.definition).buckets == default_buckets());
}

TEST_CASE("a renamed counter keeps its _total convention") {
  const ViewedDefinition renamed =
      apply_views(views_of(R"({"views": [{"select": {"name": "tokenspeed:prompt_tokens"},
          "name": "llm_prompt_tokens_total"}]})"),
                  kTokens);
  const MetricDefinition checked = checked_definition(renamed.definition);
  CHECK(checked.name == "llm_prompt_tokens");
  CHECK(checked.sample_name() == "llm_prompt_tokens_total");
}

TEST_CASE("views keep or drop labels, recording the engine's index of each kept one") {
  const ViewedDefinition dropped = apply_views(
      views_of(
          R"({"views": [{"select": {"name": "*"}, "drop_labels": ["request_id", "absent"]}]})"),
      kTtft);
  CHECK(dropped.labels_changed);
  CHECK(dropped.definition.label_names == std::vector<std::string>{"model"});
  CHECK(dropped.kept_labels == std::vector<std::size_t>{0});
  CHECK(dropped.engine_label_count == 2);

  const ViewedDefinition kept = apply_views(
      views_of(R"({"views": [{"select": {"name": "*"}, "keep_labels": ["request_id"]}]})"), kTtft);
  CHECK(kept.definition.label_names == std::vector<std::string>{"request_id"});
  CHECK(kept.kept_labels == std::vector<std::size_t>{1});

  const ViewedDefinition none = apply_views(
      views_of(R"({"views": [{"select": {"name": "*"}, "drop_labels": ["absent"]}]})"), kTtft);
  CHECK_FALSE(none.labels_changed);
  CHECK(none.kept_labels.empty());
  CHECK(none.definition.label_names == kTtft.label_names);
}

TEST_CASE("views drop a family and limit its outputs; a later view's setting wins") {
  const MetricViews views = views_of(R"({"views": [
      {"select": {"name": "*"}, "outputs": ["prometheus", "otlp"]},
      {"select": {"name": "tokenspeed:prompt_tokens"}, "outputs": ["otlp"]},
      {"select": {"name": "tokenspeed:time_to_first_token_seconds"}, "drop": true}]})");
  const ViewedDefinition tokens = apply_views(views, kTokens);
  CHECK_FALSE(tokens.dropped);
  CHECK(reaches_output(tokens.outputs, "otlp"));
  CHECK_FALSE(reaches_output(tokens.outputs, kPrometheusOutput));
  CHECK(apply_views(views, kTtft).dropped);
  CHECK(reaches_output(std::nullopt, "jsonl"));
}

TEST_CASE("check describes each family as the views leave it and warns of unused views") {
  const MetricViews views = views_of(R"({"views": [
      {"select": {"name": "tokenspeed:time_to_first_token_seconds"}, "buckets": [0.05, 0.1],
       "drop_labels": ["request_id"], "outputs": ["prometheus"]},
      {"select": {"name": "tokenspeed:prompt_tokens"}, "drop": true},
      {"select": {"name": "vllm:*"}}]})");
  CHECK(describe_viewed(apply_views(views, kTtft)) ==
        "tokenspeed:time_to_first_token_seconds histogram buckets=[0.05,0.1] labels=[model] "
        "outputs=[prometheus] help=\"TTFT\"");
  CHECK(describe_viewed(apply_views(views, kTokens)) ==
        "tokenspeed:prompt_tokens_total counter dropped");
  const auto warnings = unused_view_warnings(views, {kTtft, kTokens});
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("key 'views[2].select'") != std::string::npos);
  CHECK(warnings[0].find("file 'views.json'") != std::string::npos);
}

TEST_CASE(
    "an unused view's warning says the engine may define the family, unless its exposition was "
    "read") {
  const MetricViews views = views_of(R"({"views": [{"select": {"name": "vllm:*"}}]})");
  const auto without = unused_view_warnings(views, {kTtft});
  REQUIRE(without.size() == 1);
  CHECK(without[0].find("it applies only if the engine defines such a family") !=
        std::string::npos);
  const auto with = unused_view_warnings(views, {kTtft}, "engine-metrics.txt");
  REQUIRE(with.size() == 1);
  CHECK(with[0].find("key 'views[0].select'") != std::string::npos);
  CHECK(with[0].find("of the engine's exposition 'engine-metrics.txt' ('vllm:*')") !=
        std::string::npos);
  CHECK(with[0].find("engine defines") == std::string::npos);
  MetricDefinition engine = kTokens;
  engine.name = "vllm:prompt_tokens";
  CHECK(unused_view_warnings(views, {kTtft, engine}, "engine-metrics.txt").empty());
}

TEST_CASE("check writes a help of several lines on one line, escaped") {
  MetricDefinition gauge{"g", MetricKind::gauge, "a \"b\"\\\nc", "", {}, {}, {}};
  CHECK(describe_viewed(apply_views(MetricViews{}, gauge)) ==
        "g gauge labels=[] outputs=all help=\"a \\\"b\\\"\\\\\\nc\"");
}

TEST_CASE("no view selects the host's own families") {
  const MetricViews views = views_of(R"({"views": [{"select": {"name": "*"}, "drop": true}]})");
  const MetricDefinition own{
      "tokenspeed_metrics_reporter_events", MetricKind::counter, "", "", {"reporter"}, {}, {}};
  CHECK_FALSE(view_selects(views.views[0], own));
  CHECK_FALSE(apply_views(views, own).dropped);
  CHECK(apply_views(views, kTokens).dropped);
}

TEST_CASE("an output a view names that is not selected is warned of, naming the key") {
  const MetricViews views = views_of(R"({"views": [
      {"select": {"name": "*"}, "outputs": ["prometheus", "otpl"]},
      {"select": {"name": "a"}, "outputs": ["otlp"]}]})");
  const auto warnings = unselected_output_warnings(views, {"prometheus", "otlp"});
  REQUIRE(warnings.size() == 1);
  CHECK(warnings[0].find("key 'views[0].outputs[1]'") != std::string::npos);
  CHECK(warnings[0].find("'otpl' is not a selected output") != std::string::npos);
  CHECK(unselected_output_warnings(views, {"prometheus", "otlp", "otpl"}).empty());
}
