// prometheus_options_test.cpp — --metrics-host, --metrics-port, --metrics-multiproc-dir.
#include <catch2/catch.hpp>

#include "prometheus/multiprocess_run_dir.hpp"
#include "prometheus/prometheus_options.hpp"
#include "config/startup_error.hpp"

using namespace tokenspeed::metrics;
namespace po = boost::program_options;

namespace {

PrometheusOptions parse(std::vector<const char*> args) {
  args.insert(args.begin(), "tokenspeed-metrics");
  po::options_description description;
  add_prometheus_options(description);
  po::variables_map values;
  po::store(po::parse_command_line(static_cast<int>(args.size()), args.data(), description),
            values);
  po::notify(values);
  return read_prometheus_options(values);
}

}  // namespace

TEST_CASE(
    "the endpoint listens on 127.0.0.1 and the documented default port unless told otherwise") {
  const PrometheusOptions options = parse({});
  CHECK(options.endpoint.host == "127.0.0.1");
  CHECK(options.endpoint.port == kDefaultMetricsPort);
  CHECK(options.multiproc_base_dir == default_multiprocess_base_dir());
}

TEST_CASE("--metrics-host, --metrics-port and --metrics-multiproc-dir are read") {
  const PrometheusOptions options = parse(
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
