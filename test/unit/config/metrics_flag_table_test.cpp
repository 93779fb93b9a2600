// metrics_flag_table_test.cpp — the one table of the metrics flags: what is
// made from it (the parser, the help, Options::to_flags() and the docs'
// table) says the same of every flag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/metrics_flag_table.hpp"
#include "config/metrics_flags.hpp"

using namespace tokenspeed::metrics;

namespace {

// Every field set, none to its default.
Options every_option() {
  Options options;
  options.enable_metrics = true;
  options.reporters = {"prometheus,jsonl", "otlp"};
  options.reporter_config = "/etc/tsm/reporters.json";
  options.plugin_dirs = {"/opt/a", "/opt/b"};
  options.allow_insecure_plugins = true;
  options.queue_size = 1024;
  options.shutdown_timeout = std::chrono::duration<double>(0.25);
  options.host = "0.0.0.0";
  options.port = 0;
  options.multiproc_dir = "/run/tsm";
  options.max_series_per_family = 500;
  options.web_config = "/etc/tsm/web.yml";
  options.node_name = "gpu-node-7";
  return options;
}

Options parsed(const std::vector<std::string>& flags) {
  const ExtractedFlags extracted = extract_flags(flags, all_metrics_flags());
  CHECK(extracted.rest.empty());
  return options_from_flags(extracted.values);
}

}  // namespace

TEST_CASE("every flag has a name and a field of its own") {
  std::set<std::string_view> names;
  std::set<std::size_t> seen_fields;
  std::vector<OptionsField> fields;
  for (const MetricsFlag& flag : kMetricsFlags) {
    CHECK(names.insert(flag.name).second);
    CHECK((flag.name.starts_with("metrics-") || flag.name == "enable-metrics"));
    CHECK(std::find(fields.begin(), fields.end(), flag.field) == fields.end());
    fields.push_back(flag.field);
    CHECK_FALSE(flag.help.empty());
    CHECK_FALSE(flag.meaning.empty());
    // The docs show a default for every flag: a value, or words.
    CHECK((!default_text(flag).empty() || !flag.default_text.empty()));
  }
  CHECK(names.size() == 13);
}

TEST_CASE("options with every field set say the same after to_flags and the parser") {
  const Options options = every_option();
  const Options back = parsed(options.to_flags());
  CHECK(back.to_flags() == options.to_flags());
  CHECK(back.reporters == options.reporters);
  CHECK(back.shutdown_timeout == options.shutdown_timeout);
  CHECK(back.port == 0);
  CHECK(back.max_series_per_family == 500);
  for (const MetricsFlag& flag : kMetricsFlags) {
    CHECK(is_given(back, flag));
    CHECK_FALSE(is_given(Options{}, flag));
  }
}

TEST_CASE("a flag left out or at its default is not given") {
  const Options none = parsed({});
  CHECK(none.to_flags().empty());
  const Options defaults = parsed({"--metrics-port", "9431"});
  CHECK(defaults.port == 9431);  // given, though equal to the default
}

TEST_CASE("the help shows every flag with the table's default") {
  std::ostringstream help;
  help << all_metrics_flags();
  for (const MetricsFlag& flag : kMetricsFlags) {
    std::string line = flag_spelling(flag);
    if (!flag.value_name.empty()) line += " arg";
    if (!default_text(flag).empty()) line += " (=" + default_text(flag) + ")";
    CHECK_THAT(help.str(), Catch::Contains(line));
  }
  CHECK_THAT(help.str(), Catch::Contains("--metrics-reporter-queue-size arg (=8192)"));
  CHECK_THAT(help.str(), Catch::Contains("--metrics-shutdown-timeout arg (=5)"));
  CHECK_THAT(help.str(), Catch::Contains("--metrics-port arg (=9431)"));
}

TEST_CASE("the docs' table has one row per flag of its groups, with its value and default") {
  constexpr FlagGroup kPrometheus[] = {FlagGroup::prometheus};
  const std::string table = metrics_flags_markdown(kPrometheus);
  CHECK(table.starts_with("| Flag | Default | Meaning |\n|---|---|---|\n"));
  CHECK(std::count(table.begin(), table.end(), '\n') == 2 + 5);
  CHECK_THAT(table, Catch::Contains("| `--metrics-port PORT` | `9431` | Port of the endpoint."));
  CHECK_THAT(table, Catch::Contains("| `--metrics-web-config FILE` | none (plain HTTP"));
  CHECK_THAT(metrics_flags_markdown(kAllFlagGroups),
             Catch::Contains("| `--enable-metrics` | off | Turn metrics on."));
}

TEST_CASE("a flag is found by its name with or without the dashes") {
  REQUIRE(find_metrics_flag("--metrics-port") != nullptr);
  CHECK(find_metrics_flag("metrics-port") == find_metrics_flag("--metrics-port"));
  CHECK(flag_spelling(*find_metrics_flag("metrics-port")) == "--metrics-port");
  CHECK(find_metrics_flag("--metrics-portal") == nullptr);
}

TEST_CASE("a range's message names the range's ends, and its default lies within it") {
  for (const MetricsFlag& flag : kMetricsFlags) {
    if (!flag.range) continue;
    const std::string message(flag.range->message);
    CHECK_THAT(message, Catch::Contains(std::to_string(static_cast<long long>(flag.range->min))));
    CHECK_THAT(message, Catch::Contains(std::to_string(static_cast<long long>(flag.range->max))));
    const std::string shown = default_text(flag);
    REQUIRE_FALSE(shown.empty());
    const double value = std::stod(shown);
    CHECK((value >= flag.range->min && value <= flag.range->max));
  }
}
