// engine_options_test.cpp — the metrics flags taken out of an engine's own
// command line, and options built in code checked as the flags are.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "api/engine_options.hpp"
#include "prometheus/prometheus_options.hpp"
#include "tokenspeed/metrics/options.hpp"
#include "tokenspeed/metrics/startup_error.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("the metrics flags are taken out and the engine's arguments are returned untouched") {
  const std::vector<std::string> args{"serve",
                                      "--model",
                                      "llama",
                                      "--enable-metrics",
                                      "--port=8000",
                                      "--metrics-reporters",
                                      "prometheus,jsonl",
                                      "-v",
                                      "--metrics-port=9100",
                                      "--metrics-reporter-config",
                                      "/etc/m.json",
                                      "--metrics-plugin-dir",
                                      "/opt/p",
                                      "--metrics-shutdown-timeout",
                                      "2.5",
                                      "--tensor-parallel-size",
                                      "4"};
  const ExtractedOptions extracted = extract_metrics_options(args);
  CHECK(extracted.rest == std::vector<std::string>{"serve", "--model", "llama", "--port=8000", "-v",
                                                   "--tensor-parallel-size", "4"});
  const Options& options = extracted.options;
  CHECK(options.enable_metrics);
  CHECK(options.reporters == std::vector<std::string>{"prometheus,jsonl"});
  CHECK(options.reporter_config == "/etc/m.json");
  CHECK(options.plugin_dirs == std::vector<std::string>{"/opt/p"});
  CHECK(options.port == 9100);
  REQUIRE(options.shutdown_timeout.has_value());
  CHECK(options.shutdown_timeout->count() == 2.5);
  CHECK_FALSE(options.queue_size.has_value());  // not given: the default applies
  CHECK_FALSE(options.host.has_value());
}

TEST_CASE("argc and argv shrink to the engine's own arguments, the same pointers in order") {
  std::vector<std::string> storage{"engine",         "--enable-metrics", "--model",  "m",
                                   "--metrics-host", "0.0.0.0",          "input.txt"};
  std::vector<char*> argv;
  for (std::string& arg : storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(storage.size());
  const Options options = extract_metrics_options(argc, argv.data());
  REQUIRE(argc == 4);
  CHECK(argv[0] == storage[0].data());
  CHECK(argv[1] == storage[2].data());
  CHECK(argv[2] == storage[3].data());
  CHECK(argv[3] == storage[6].data());
  CHECK(argv[4] == nullptr);
  CHECK(options.enable_metrics);
  CHECK(options.host == "0.0.0.0");
}

TEST_CASE("an unknown --metrics- flag is a startup error naming it") {
  try {
    extract_metrics_options(std::vector<std::string>{"--model", "m", "--metrics-reporter", "x"});
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.key() == "--metrics-reporter");
    CHECK_THAT(error.what(), Catch::Contains("unknown metrics flag"));
  }
  CHECK_THROWS_AS(extract_metrics_options(std::vector<std::string>{"--enable-metrics-now"}),
                  StartupError);
}

TEST_CASE("a metrics flag without its value or out of range is a startup error naming the flag") {
  try {
    extract_metrics_options(std::vector<std::string>{"--metrics-port"});
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.key() == "--metrics-port");
  }
  try {
    extract_metrics_options(std::vector<std::string>{"--metrics-reporter-queue-size", "1"});
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.key() == "--metrics-reporter-queue-size");
  }
}

TEST_CASE("options built in code are checked by the command line's rules") {
  Options options;
  options.enable_metrics = true;
  options.port = 70000;
  try {
    launcher_options_from(options);
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.key() == "--metrics-port");
    CHECK(error.reporter() == "prometheus");
  }
}

TEST_CASE("options built in code say the same as their flags") {
  Options options;
  options.enable_metrics = true;
  options.reporters = {"prometheus", "jsonl"};
  options.queue_size = 1024;
  options.shutdown_timeout = std::chrono::duration<double>(0.25);
  options.host = "127.0.0.2";
  options.port = 0;
  options.max_series_per_family = 500;
  options.node_name = "gpu-node-7";
  const ExtractedOptions round_trip = extract_metrics_options(options.to_flags());
  CHECK(round_trip.rest.empty());
  CHECK(round_trip.options.reporters == options.reporters);
  CHECK(round_trip.options.queue_size == options.queue_size);
  CHECK(round_trip.options.shutdown_timeout == options.shutdown_timeout);
  CHECK(round_trip.options.host == options.host);
  CHECK(round_trip.options.port == options.port);
  CHECK(round_trip.options.max_series_per_family == options.max_series_per_family);
  CHECK(round_trip.options.node_name == options.node_name);
  const LauncherOptions launcher = launcher_options_from(options);
  CHECK(launcher.settings.queue_size == 1024);
  CHECK(launcher.settings.shutdown_timeout == std::chrono::milliseconds(250));
  CHECK(endpoint_options(launcher.settings).host == "127.0.0.2");
  CHECK(launcher.settings.max_series_per_family == 500);
  CHECK(launcher.settings.node_name == "gpu-node-7");
}

TEST_CASE("a bound on series built in code is checked as --metrics-max-series-per-family") {
  Options options;
  options.max_series_per_family = 0;
  try {
    launcher_options_from(options);
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.key() == "--metrics-max-series-per-family");
  }
  CHECK_FALSE(extract_metrics_options(std::vector<std::string>{}).options.max_series_per_family);
}

TEST_CASE("options built in code and their flags are refused alike: the same flag and message") {
  struct Case {
    std::function<void(Options&)> set;
    std::vector<std::string> flags;
  };
  const std::vector<Case> cases{
      {[](Options& o) { o.queue_size = 1; }, {"--metrics-reporter-queue-size", "1"}},
      {[](Options& o) { o.queue_size = 16777217; }, {"--metrics-reporter-queue-size=16777217"}},
      {[](Options& o) { o.shutdown_timeout = std::chrono::duration<double>(3601); },
       {"--metrics-shutdown-timeout", "3601"}},
      {[](Options& o) { o.host = ""; }, {"--metrics-host", ""}},
      {[](Options& o) { o.port = 70000; }, {"--metrics-port", "70000"}},
      {[](Options& o) { o.multiproc_dir = ""; }, {"--metrics-multiproc-dir", ""}},
      {[](Options& o) { o.max_series_per_family = 0; }, {"--metrics-max-series-per-family", "0"}},
      {[](Options& o) { o.max_series_per_family = 16777217; },
       {"--metrics-max-series-per-family", "16777217"}},
      {[](Options& o) { o.node_name = ""; }, {"--metrics-node-name", ""}},
      {[](Options& o) { o.node_name = "gpu node"; }, {"--metrics-node-name", "gpu node"}},
  };
  for (const Case& each : cases) {
    Options options;
    each.set(options);
    std::string from_code;
    std::string from_flags;
    try {
      launcher_options_from(options);
    } catch (const StartupError& error) {
      from_code = error.what();
    }
    try {
      extract_metrics_options(each.flags);
    } catch (const StartupError& error) {
      from_flags = error.what();
    }
    CHECK_FALSE(from_code.empty());
    CHECK(from_code == from_flags);
  }
}

TEST_CASE("options left unset keep the command line's defaults") {
  const LauncherOptions launcher = launcher_options_from(Options{});
  const LauncherOptions from_flags =
      launcher_options_from(extract_metrics_options(std::vector<std::string>{}).options);
  for (const MetricsSettings* settings : {&launcher.settings, &from_flags.settings}) {
    CHECK_FALSE(settings->given.enable_metrics);
    CHECK(settings->queue_size == kDefaultQueueSize);
    CHECK(settings->shutdown_timeout == kDefaultShutdownTimeout);
    CHECK(settings->max_series_per_family == kDefaultMaxSeriesPerFamily);
    CHECK(endpoint_options(*settings).host == "127.0.0.1");
    CHECK(endpoint_options(*settings).port == kDefaultMetricsPort);
    CHECK_FALSE(settings->multiproc_dir);
    CHECK(settings->node_name.empty());  // the host name
  }
}

TEST_CASE("the metrics flags' help lists every flag") {
  const std::string help = metrics_options_help();
  for (const char* flag :
       {"--enable-metrics", "--metrics-reporters", "--metrics-reporter-config",
        "--metrics-plugin-dir", "--metrics-allow-insecure-plugins", "--metrics-reporter-queue-size",
        "--metrics-shutdown-timeout", "--metrics-host", "--metrics-port", "--metrics-multiproc-dir",
        "--metrics-max-series-per-family", "--metrics-node-name"}) {
    CHECK_THAT(help, Catch::Contains(flag));
  }
}

namespace {

// Sets variables for one scope and removes them after, also on a failed REQUIRE.
class ScopedEnvironment {
 public:
  ScopedEnvironment(std::initializer_list<std::pair<const char*, const char*>> variables) {
    for (const auto& [name, value] : variables) {
      ::setenv(name, value, 1);
      names_.emplace_back(name);
    }
  }
  ~ScopedEnvironment() {
    for (const std::string& name : names_) ::unsetenv(name.c_str());
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  std::vector<std::string> names_;
};

}  // namespace

TEST_CASE("the metrics options come from TOKENSPEED_METRICS_ variables, one per flag") {
  CHECK(metrics_flag_variable("--enable-metrics") == "TOKENSPEED_METRICS_ENABLE");
  CHECK(metrics_flag_variable("--metrics-reporter-queue-size") ==
        "TOKENSPEED_METRICS_REPORTER_QUEUE_SIZE");
  {
    const ScopedEnvironment environment{{"TOKENSPEED_METRICS_ENABLE", "yes"},
                                        {"TOKENSPEED_METRICS_REPORTERS", "prometheus,jsonl"},
                                        {"TOKENSPEED_METRICS_PLUGIN_DIR", "/opt/a::/opt/b"},
                                        {"TOKENSPEED_METRICS_PORT", "9100"},
                                        {"TOKENSPEED_METRICS_ALLOW_INSECURE_PLUGINS", "off"}};
    const Options options = metrics_options_from_environment();
    CHECK(options.enable_metrics);
    CHECK(options.reporters == std::vector<std::string>{"prometheus,jsonl"});
    CHECK(options.plugin_dirs == std::vector<std::string>{"/opt/a", "/opt/b"});
    CHECK(options.port == 9100);
    CHECK_FALSE(options.allow_insecure_plugins);
    CHECK_FALSE(options.host.has_value());
  }
  CHECK_FALSE(metrics_options_from_environment().enable_metrics);  // nothing set: the defaults
}

TEST_CASE("a bad TOKENSPEED_METRICS_ value is a startup error keyed by the variable") {
  SECTION("a value out of range") {
    const ScopedEnvironment environment{{"TOKENSPEED_METRICS_PORT", "70000"}};
    try {
      static_cast<void>(metrics_options_from_environment());
      FAIL("no error");
    } catch (const StartupError& error) {
      CHECK(error.key() == "TOKENSPEED_METRICS_PORT");
    }
  }
  SECTION("a switch that is neither yes nor no") {
    const ScopedEnvironment environment{{"TOKENSPEED_METRICS_ENABLE", "maybe"}};
    try {
      static_cast<void>(metrics_options_from_environment());
      FAIL("no error");
    } catch (const StartupError& error) {
      CHECK(error.key() == "TOKENSPEED_METRICS_ENABLE");
      CHECK_THAT(error.what(), Catch::Contains("yes"));
    }
  }
}
