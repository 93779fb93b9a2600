// prometheus_options_test.cpp — --metrics-host, --metrics-port, --metrics-multiproc-dir,
// --metrics-max-series-per-family: parsed and checked as the flags are, and
// the endpoint's and the run directory's defaults.
#include <catch2/catch.hpp>

#include <boost/program_options/parsers.hpp>

#include "config/metrics_flags.hpp"
#include "core/startup_error.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/prometheus_options.hpp"

using namespace tokenspeed::metrics;
namespace po = boost::program_options;

namespace {

// What the launcher takes from the Prometheus flags.
struct Parsed {
  PrometheusEndpointOptions endpoint;
  std::filesystem::path multiproc_base_dir;
  std::size_t max_series_per_family = 0;
};

Parsed parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tokenspeed-metrics");
  po::options_description description;
  constexpr FlagGroup kPrometheus[] = {FlagGroup::prometheus};
  add_metrics_flags(description, kPrometheus);
  po::variables_map values;
  po::store(po::parse_command_line(static_cast<int>(args.size()), args.data(), description),
            values);
  po::notify(values);
  const MetricsSettings settings = check_options(options_from_flags(values));
  return {endpoint_options(settings), multiproc_base_dir(settings), settings.max_series_per_family};
}

}  // namespace

TEST_CASE(
    "the endpoint listens on 127.0.0.1 and the documented default port unless told otherwise") {
  const Parsed options = parse({});
  CHECK(options.endpoint.host == "127.0.0.1");
  CHECK(options.endpoint.port == kDefaultMetricsPort);
  CHECK(options.multiproc_base_dir == default_multiprocess_base_dir());
}

TEST_CASE("--metrics-host, --metrics-port and --metrics-multiproc-dir are read") {
  const Parsed options = parse(
      {"--metrics-host", "0.0.0.0", "--metrics-port", "0", "--metrics-multiproc-dir", "/run/tsm"});
  CHECK(options.endpoint.host == "0.0.0.0");
  CHECK(options.endpoint.port == 0);
  CHECK(options.multiproc_base_dir == "/run/tsm");
}

TEST_CASE("a port outside 0-65535 is a startup error naming --metrics-port") {
  try {
    parse({"--metrics-port", "70000"});
    FAIL("accepted");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "--metrics-port");
    CHECK(std::string(error.what()).find("70000") != std::string::npos);
  }
  CHECK_THROWS_AS(parse({"--metrics-port", "-1"}), StartupError);
  CHECK_THROWS_AS(parse({"--metrics-host", ""}), StartupError);
}

TEST_CASE("--metrics-max-series-per-family defaults to 10000 and is read") {
  CHECK(parse({}).max_series_per_family == 10000);
  CHECK(parse({"--metrics-max-series-per-family", "1"}).max_series_per_family == 1);
  CHECK(parse({"--metrics-max-series-per-family", "16777216"}).max_series_per_family == 16777216);
}

TEST_CASE("a bound on series outside 1-16777216 is a startup error naming the flag") {
  for (const char* bad : {"0", "-5", "16777217"}) {
    try {
      parse({"--metrics-max-series-per-family", bad});
      FAIL("accepted " << bad);
    } catch (const StartupError& error) {
      CHECK(error.context().key == "--metrics-max-series-per-family");
      CHECK_THAT(error.what(), Catch::Contains(bad) && Catch::Contains("1-16777216"));
    }
  }
}

TEST_CASE("the flags left at their defaults are not given: the endpoint's defaults apply") {
  po::options_description description;
  constexpr FlagGroup kPrometheus[] = {FlagGroup::prometheus};
  add_metrics_flags(description, kPrometheus);
  po::variables_map values;
  const char* argv[] = {"tokenspeed-metrics"};
  po::store(po::parse_command_line(1, argv, description), values);
  const Options given = options_from_flags(values);
  CHECK_FALSE(given.host);
  CHECK_FALSE(given.port);
  CHECK_FALSE(given.multiproc_dir);
  CHECK_FALSE(given.max_series_per_family);
  MetricsSettings settings;
  settings.host = "10.0.0.1";
  settings.port = 0;
  settings.multiproc_dir = "/run/tsm";
  CHECK(endpoint_options(settings).host == "10.0.0.1");
  CHECK(endpoint_options(settings).port == 0);
  CHECK(multiproc_base_dir(settings) == "/run/tsm");
}
