// metrics_flag_table_test.cpp — the one table of the metrics flags: what is
// made from it (the parser, the help, Options::to_flags() and the docs'
// table) says the same of every flag.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "config/metrics_flag_table.hpp"
#include "config/metrics_flags.hpp"
#include "core/startup_error.hpp"

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
  options.metric_views = "/etc/tsm/views.json";
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
  CHECK(names.size() == 14);
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

// Each field's row, found while compiling: a field without one does not build.
static_assert(metrics_flag(&Options::enable_metrics).name == "enable-metrics");
static_assert(metrics_flag(&Options::reporters).name == "metrics-reporters");
static_assert(metrics_flag(&Options::reporter_config).name == "metrics-reporter-config");
static_assert(metrics_flag(&Options::plugin_dirs).name == "metrics-plugin-dir");
static_assert(metrics_flag(&Options::allow_insecure_plugins).name ==
              "metrics-allow-insecure-plugins");
static_assert(metrics_flag(&Options::queue_size).name == "metrics-reporter-queue-size");
static_assert(metrics_flag(&Options::shutdown_timeout).name == "metrics-shutdown-timeout");
static_assert(metrics_flag(&Options::node_name).name == "metrics-node-name");
static_assert(metrics_flag(&Options::metric_views).name == "metrics-views");
static_assert(metrics_flag(&Options::host).name == "metrics-host");
static_assert(metrics_flag(&Options::port).name == "metrics-port");
static_assert(metrics_flag(&Options::multiproc_dir).name == "metrics-multiproc-dir");
static_assert(metrics_flag(&Options::max_series_per_family).name ==
              "metrics-max-series-per-family");
static_assert(metrics_flag(&Options::web_config).name == "metrics-web-config");

namespace {

// A lookup over a map, as the environment is read.
std::function<const char*(const std::string&)> environment(
    const std::map<std::string, std::string>& variables) {
  return [&variables](const std::string& name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

// The key and message of the error the environment gives, "" without one.
std::pair<std::string, std::string> environment_error(
    const std::map<std::string, std::string>& variables) {
  try {
    static_cast<void>(options_from_environment(environment(variables)));
  } catch (const StartupError& error) {
    return {error.key(), error.message()};
  }
  return {};
}

}  // namespace

TEST_CASE("check_options takes each default from its row") {
  const MetricsSettings settings = check_options(Options{});
  CHECK(settings.queue_size ==
        static_cast<std::size_t>(flag_default<long long>(metrics_flag(&Options::queue_size))));
  CHECK(settings.queue_size == kDefaultQueueSize);
  CHECK(settings.shutdown_timeout == kDefaultShutdownTimeout);
  CHECK(settings.max_series_per_family == kDefaultMaxSeriesPerFamily);
  CHECK_FALSE(settings.port);  // the endpoint's own default applies
  CHECK(settings.node_name.empty());
}

TEST_CASE("the environment gives every flag through its variable, read by its row") {
  const std::map<std::string, std::string> variables{
      {"TOKENSPEED_METRICS_ENABLE", "On"},
      {"TOKENSPEED_METRICS_REPORTERS", "prometheus,jsonl"},
      {"TOKENSPEED_METRICS_REPORTER_CONFIG", "/etc/tsm/reporters.json"},
      {"TOKENSPEED_METRICS_PLUGIN_DIR", ":/opt/a::/opt/b:"},
      {"TOKENSPEED_METRICS_ALLOW_INSECURE_PLUGINS", "TRUE"},
      {"TOKENSPEED_METRICS_REPORTER_QUEUE_SIZE", "1024"},
      {"TOKENSPEED_METRICS_SHUTDOWN_TIMEOUT", "0.25"},
      {"TOKENSPEED_METRICS_NODE_NAME", "gpu-node-7"},
      {"TOKENSPEED_METRICS_VIEWS", "/etc/tsm/views.json"},
      {"TOKENSPEED_METRICS_HOST", "0.0.0.0"},
      {"TOKENSPEED_METRICS_PORT", "0"},
      {"TOKENSPEED_METRICS_MULTIPROC_DIR", "/run/tsm"},
      {"TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY", "500"},
      {"TOKENSPEED_METRICS_WEB_CONFIG", "/etc/tsm/web.yml"}};
  REQUIRE(variables.size() == std::size(kMetricsFlags));
  for (const MetricsFlag& flag : kMetricsFlags) CHECK(variables.count(flag_variable(flag.name)));
  Options expected = every_option();
  expected.reporters = {"prometheus,jsonl"};  // one variable, one value
  CHECK(options_from_environment(environment(variables)).to_flags() == expected.to_flags());
  CHECK(options_from_environment(environment({})).to_flags().empty());
}

TEST_CASE("every ranged flag's variable takes its ends and refuses one past them") {
  for (const MetricsFlag& flag : kMetricsFlags) {
    if (!flag.range) continue;
    const std::string variable = flag_variable(flag.name);
    const auto min = static_cast<long long>(flag.range->min);
    const auto max = static_cast<long long>(flag.range->max);
    INFO(variable);
    CHECK(environment_error({{variable, std::to_string(min)}}).first.empty());
    CHECK(environment_error({{variable, std::to_string(max)}}).first.empty());
    for (const long long outside : {min - 1, max + 1}) {
      const auto [key, message] = environment_error({{variable, std::to_string(outside)}});
      CHECK(key == variable);
      CHECK_FALSE(message.empty());
    }
  }
}

TEST_CASE("a variable that is not its flag's kind is an error naming the variable") {
  using Case = std::tuple<std::string, std::string, std::string>;
  for (const auto& [variable, value, message] : {
           Case{"TOKENSPEED_METRICS_PORT", "9x", "expected a whole number, got '9x'"},
           Case{"TOKENSPEED_METRICS_PORT", " 9100", "expected a whole number, got ' 9100'"},
           Case{"TOKENSPEED_METRICS_REPORTER_QUEUE_SIZE", "1.5",
                "expected a whole number, got '1.5'"},
           Case{"TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY", "", "expected a whole number, got ''"},
           Case{"TOKENSPEED_METRICS_SHUTDOWN_TIMEOUT", "inf", "expected seconds, got 'inf'"},
           Case{"TOKENSPEED_METRICS_SHUTDOWN_TIMEOUT", "nan", "expected seconds, got 'nan'"},
           Case{"TOKENSPEED_METRICS_ENABLE", "maybe",
                "expected 1, true, yes or on (or 0, false, no, off)"},
           Case{"TOKENSPEED_METRICS_HOST", "", "the host must not be empty"},
           Case{"TOKENSPEED_METRICS_WEB_CONFIG", "", "the file name must not be empty"},
           Case{"TOKENSPEED_METRICS_NODE_NAME", "gpu node",
                "may hold printable ASCII characters but no space, '/', ',', quote or "
                "backslash"},
       }) {
    INFO(variable << "=" << value);
    CHECK(environment_error({{variable, value}}) == std::make_pair(variable, message));
  }
}

TEST_CASE("a flag's error from code or the command line names the flag") {
  Options options;
  options.host = "";
  try {
    check_options(options);
    FAIL("accepted");
  } catch (const StartupError& error) {
    CHECK(error.key() == "--metrics-host");
    CHECK(error.reporter() == "prometheus");
  }
}
