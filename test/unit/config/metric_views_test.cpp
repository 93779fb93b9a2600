// metric_views_test.cpp — the views file read strictly, as JSON or YAML
// (each mistake names the file and the key), and views applied to definitions: selection by name,
// glob and kind, buckets, exponential and back, rename and help, labels kept
// or dropped, outputs, drop, and what check prints.
#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

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

// Two readings of one file hold the same JSON and the same views, field by field.
void check_same_views(const MetricViews& a, const MetricViews& b) {
  CHECK(a.json == b.json);
  REQUIRE(a.views.size() == b.views.size());
  for (std::size_t i = 0; i < a.views.size(); ++i) {
    INFO("view " << i);
    const MetricView& x = a.views[i];
    const MetricView& y = b.views[i];
    CHECK(x.select_name == y.select_name);
    CHECK(x.select_kind == y.select_kind);
    CHECK(x.name == y.name);
    CHECK(x.help == y.help);
    CHECK(x.aggregation == y.aggregation);
    CHECK(x.buckets == y.buckets);
    REQUIRE(x.exponential.has_value() == y.exponential.has_value());
    if (x.exponential) {
      CHECK(x.exponential->max_scale == y.exponential->max_scale);
      CHECK(x.exponential->max_buckets == y.exponential->max_buckets);
      CHECK(x.exponential->zero_threshold == y.exponential->zero_threshold);
    }
    CHECK(x.drop == y.drop);
    CHECK(x.keep_labels == y.keep_labels);
    CHECK(x.drop_labels == y.drop_labels);
    CHECK(x.outputs == y.outputs);
  }
}

// A views file using every key, in YAML (block and flow style, comments,
// quoted, block and non-ASCII scalars) and in JSON.
const std::string kYamlViews = R"(# Views of the TokenSpeed catalog.
views:
  - select:
      name: tokenspeed:time_to_first_token_seconds
      kind: histogram
    buckets: [0.01, 0.025, 0.05, 1, 2.5]
    name: llm_ttft_seconds
    help: "Zeit bis zum ersten Token (\u00b5s genau) – TTFT"
    drop_labels:
      - request_id
    outputs: [prometheus, otlp]
  - select: {name: '*', kind: histogram}
    exponential: {max_scale: 8, max_buckets: 160, zero_threshold: 0.001}
  - select: {name: "tokenspeed:*_tokens"}
    aggregation: classic
    keep_labels: [model_name]
    help: >-
      Tokens, folded
      over two lines
  - select:
      name: tokenspeed:num_requests_running
    drop: true
)";
const std::string kJsonViews = R"({"views": [
  {"select": {"name": "tokenspeed:time_to_first_token_seconds", "kind": "histogram"},
   "buckets": [0.01, 0.025, 0.05, 1, 2.5], "name": "llm_ttft_seconds",
   "help": "Zeit bis zum ersten Token (\u00b5s genau) – TTFT",
   "drop_labels": ["request_id"], "outputs": ["prometheus", "otlp"]},
  {"select": {"name": "*", "kind": "histogram"},
   "exponential": {"max_scale": 8, "max_buckets": 160, "zero_threshold": 0.001}},
  {"select": {"name": "tokenspeed:*_tokens"}, "aggregation": "classic",
   "keep_labels": ["model_name"], "help": "Tokens, folded over two lines"},
  {"select": {"name": "tokenspeed:num_requests_running"}, "drop": true}
]}
)";

MetricViews yaml_views_of(const std::string& text) {
  return metric_views_from_text(text, "views.yaml");
}

// The key a refused YAML views text is reported under; its line in line.
std::string refused_yaml_key(const std::string& text, std::string* message = nullptr) {
  try {
    yaml_views_of(text);
  } catch (const StartupError& error) {
    CHECK(error.file() == "views.yaml");
    if (message != nullptr) *message = error.message();
    return error.key();
  }
  FAIL("accepted: " << text);
  return "";
}

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

TEST_CASE("a cardinality limit adds the overflow label after the kept ones, and is checked") {
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "cardinality_limit": 0}]})") ==
        "views[0].cardinality_limit");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "cardinality_limit": 2.5}]})") ==
        "views[0].cardinality_limit");
  CHECK(refused_key(R"({"views": [{"select": {"name": "a"}, "cardinality_limit": "9"}]})") ==
        "views[0].cardinality_limit");
  CHECK(
      refused_key(R"({"views": [{"select": {"name": "a"}, "cardinality_limit": 99999999999}]})") ==
      "views[0].cardinality_limit");
  const ViewedDefinition capped =
      apply_views(views_of(R"({"views": [{"select": {"name": "*"}, "drop_labels": ["request_id"]},
                             {"select": {"name": "tokenspeed:time*"}, "cardinality_limit": 9},
                             {"select": {"name": "*"}, "cardinality_limit": 100}]})"),
                  kTtft);
  CHECK(capped.cardinality_limit == 100u);  // the later view's
  CHECK(capped.labels_changed);
  CHECK(capped.definition.label_names ==
        std::vector<std::string>{"model", std::string(kOverflowLabel)});
  CHECK(capped.kept_labels == std::vector<std::size_t>{0});
  CHECK(describe_viewed(capped).find("labels=[model,otel_metric_overflow] outputs=all "
                                     "cardinality_limit=100") != std::string::npos);
  // Every engine label kept: the engine's indexes are listed all the same.
  const ViewedDefinition whole = apply_views(
      views_of(R"({"views": [{"select": {"name": "*"}, "cardinality_limit": 2}]})"), kTtft);
  CHECK(whole.kept_labels == std::vector<std::size_t>{0, 1});
  // An engine label of the overflow label's name: the viewed family is invalid.
  MetricDefinition clash = kTokens;
  clash.label_names = {"otel_metric_overflow"};
  CHECK(describe_viewed(apply_views(views_of(R"({"views": [{"select": {"name": "*"},
                                         "cardinality_limit": 2}]})"),
                                    clash))
            .find(" invalid: ") != std::string::npos);
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

TEST_CASE("a views file's form follows its extension, else its first character") {
  CHECK(views_form("views.yaml", "{}") == ViewsForm::yaml);
  CHECK(views_form("/etc/views.YML", "") == ViewsForm::yaml);
  CHECK(views_form("views.json", "views: []") == ViewsForm::json);
  CHECK(views_form("views.Json", "") == ViewsForm::json);
  CHECK(views_form("views", " \n\t{\"views\": []}") == ViewsForm::json);
  CHECK(views_form("views.conf", "views: []") == ViewsForm::yaml);
  CHECK(views_form("/etc/tsm.yaml/views", "{}") == ViewsForm::json);
  CHECK(views_form("/etc/tsm.json/views", "views: []") == ViewsForm::yaml);
  CHECK(views_form("views", "") == ViewsForm::yaml);
}

TEST_CASE("the YAML form of a views file gives the views of its JSON form") {
  check_same_views(metric_views_from_text(kYamlViews, "views.yaml"),
                   metric_views_from_text(kJsonViews, "views.json"));
  // Without a known extension, each is read in its own form.
  check_same_views(metric_views_from_text(kYamlViews, "views"),
                   metric_views_from_text(kJsonViews, "views"));
  // The JSON cases of the tests above, written as YAML.
  const std::pair<const char*, const char*> cases[] = {
      {R"({})", "{}"},
      {R"({"views": []})", "views: []"},
      {R"({"views": [{"select": {"name": "tokenspeed:time_to_first_token_seconds"},
          "buckets": [0.01, 0.025, 0.05, 0.1], "name": "ttft_seconds", "help": "first token"}]})",
       "views:\n"
       "- select:\n"
       "    name: tokenspeed:time_to_first_token_seconds\n"
       "  buckets: [0.01, 0.025, 0.05, 0.1]\n"
       "  name: ttft_seconds\n"
       "  help: first token\n"},
      {R"({"views": [{"select": {"name": "*", "kind": "histogram"},
          "exponential": {"max_scale": 3, "max_buckets": 40}}]})",
       "views:\n"
       "  - select: {name: '*', kind: histogram}\n"
       "    exponential:\n"
       "      max_scale: 3\n"
       "      max_buckets: 40\n"},
      {R"({"views": [{"select": {"name": "*"}, "aggregation": "classic"}]})",
       "views: [{select: {name: '*'}, aggregation: classic}]"},
      {R"({"views": [{"select": {"name": "*"}, "drop_labels": ["request_id", "absent"]}]})",
       "views:\n  - select: {name: \"*\"}\n    drop_labels: [request_id, absent]\n"},
      {R"({"views": [
          {"select": {"name": "*"}, "outputs": ["prometheus", "otlp"]},
          {"select": {"name": "tokenspeed:prompt_tokens"}, "outputs": ["otlp"]},
          {"select": {"name": "tokenspeed:time_to_first_token_seconds"}, "drop": true}]})",
       "views:\n"
       "  - select: {name: '*'}\n"
       "    outputs: [prometheus, otlp]\n"
       "  - select: {name: tokenspeed:prompt_tokens}\n"
       "    outputs:\n"
       "      - otlp\n"
       "  - select: {name: tokenspeed:time_to_first_token_seconds}\n"
       "    drop: true\n"},
  };
  for (const auto& [json_text, yaml_text] : cases) {
    INFO(yaml_text);
    check_same_views(yaml_views_of(yaml_text), views_of(json_text));
  }
  const ViewedDefinition viewed = apply_views(yaml_views_of(kYamlViews), kTtft);
  CHECK(viewed.definition.name == "llm_ttft_seconds");
  CHECK(viewed.definition.help == "Zeit bis zum ersten Token (\u00b5s genau) \u2013 TTFT");
  CHECK(yaml_views_of(kYamlViews).views[0].buckets ==
        std::vector<double>{0.01, 0.025, 0.05, 1, 2.5});
}

TEST_CASE(
    "a YAML views file refuses duplicate keys, aliases, unknown keys and wrong types, "
    "naming the key and its line") {
  std::string message;
  CHECK(refused_yaml_key("views:\n  - select:\n      name: a\n      name: b\n", &message) ==
        "views[0].select.name");
  CHECK_THAT(message, Catch::Contains("duplicate key 'name'") && Catch::Contains("(line 4)"));
  CHECK(refused_yaml_key("views:\n  - select: &s {name: a}\n  - select: *s\n", &message) ==
        "views[1].select");
  CHECK_THAT(message, Catch::Contains("aliases") && Catch::Contains("(line 3)"));
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    bucket: [1]\n", &message) ==
        "views[0].bucket");
  CHECK_THAT(message, Catch::Contains("unknown key") && Catch::Contains("(line 3)"));
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    buckets: fast\n") ==
        "views[0].buckets");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    buckets: [0.2, 0.1]\n", &message) ==
        "views[0].buckets[1]");
  CHECK_THAT(message, Catch::Contains("ascending") && Catch::Contains("(line 3)"));
  // A quoted scalar is a string, whatever it spells.
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    buckets: ['1']\n") ==
        "views[0].buckets[0]");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    drop: 'true'\n") == "views[0].drop");
  // YAML 1.1's booleans are strings under the core schema.
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    drop: yes\n") == "views[0].drop");
  CHECK(refused_yaml_key("views:\n  - select: {name: 1}\n") == "views[0].select.name");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n"
                         "    exponential: {max_scale: 3.0}\n") ==
        "views[0].exponential.max_scale");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    buckets: [.nan]\n") ==
        "views[0].buckets[0]");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    buckets: [1, .inf]\n") ==
        "views[0].buckets[1]");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n"
                         "    exponential: {zero_threshold: .nan}\n") ==
        "views[0].exponential.zero_threshold");
  CHECK(refused_yaml_key("views:\n  - select: {name: a}\n    drop: !!bool true\n") ==
        "views[0].drop");
  CHECK(refused_yaml_key("views:\n  - select: {}\n", &message) == "views[0].select.name");
  CHECK_THAT(message, Catch::Contains("(line 2)"));
  CHECK(refused_yaml_key("views: [\n", &message).empty());
  CHECK_THAT(message, Catch::StartsWith("not valid YAML") && Catch::Contains("line"));
  CHECK(refused_yaml_key("").empty());  // an empty document is not a mapping
  CHECK(refused_yaml_key("views:\n") == "views");
}

TEST_CASE("a YAML views file is read from disk by its extension") {
  const auto dir = std::filesystem::temp_directory_path();
  const auto good = dir / "tsm_metric_views_test.yml";
  std::ofstream(good) << kYamlViews;
  const MetricViews views = read_metric_views(good.string());
  CHECK(views.file == good.string());
  check_same_views(views, views_of(kJsonViews));
  const auto bad = dir / "tsm_metric_views_test.yaml";
  std::ofstream(bad) << "views:\n  - select: {name: a}\n    bucket: [1]\n";
  try {
    read_metric_views(bad.string());
    FAIL("accepted an unknown key");
  } catch (const StartupError& error) {
    CHECK(error.file() == bad.string());
    CHECK(error.key() == "views[0].bucket");
  }
  std::filesystem::remove(good);
  std::filesystem::remove(bad);
}

TEST_CASE(
    "every prefix of a views file reads to views or is refused naming the file, and "
    "nothing else") {
  // Every byte boundary of a YAML file and of a JSON one (inside a key, a
  // number, an escape, a UTF-8 character), as a writer that stops leaves it,
  // read by the extension and by the first character.
  const std::pair<const std::string*, const char*> files[] = {{&kYamlViews, "views.yaml"},
                                                              {&kJsonViews, "views.json"},
                                                              {&kYamlViews, "views"},
                                                              {&kJsonViews, "views"}};
  for (const auto& [text, file] : files) {
    INFO(file);
    std::size_t read = 0;
    std::size_t refused = 0;
    for (std::size_t size = 0; size <= text->size(); ++size) {
      const std::string prefix = text->substr(0, size);
      try {
        static_cast<void>(metric_views_from_text(prefix, file));
        ++read;
      } catch (const StartupError& error) {
        if (error.file() != file) FAIL_CHECK("prefix of " << size << " bytes: " << error.what());
        ++refused;
      } catch (const std::exception& error) {
        FAIL_CHECK("prefix of " << size << " bytes threw: " << error.what());
      }
    }
    CHECK(read + refused == text->size() + 1);
    CHECK(read >= 1);     // the whole file at least
    CHECK(refused >= 1);  // the empty file at least
  }
}
