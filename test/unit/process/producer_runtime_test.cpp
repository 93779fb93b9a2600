// producer_runtime_test.cpp — a producer's metrics side: it attaches through the
// launcher's handoff, registers the plugins again, records into its metric
// file of the run directory and closes with its summary left there;
// standalone it leaves no summary and refuses a shared directory that is not
// one.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/startup_error.hpp"
#include "plugin_fixtures/unit_plugin_files.hpp"
#include "process/process_summary.hpp"
#include "process/producer_runtime.hpp"
#include "process/producer_handoff.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::PluginDir;
using tokenspeed::metrics::test::TempDir;

const MetricDefinition kRequests{"myengine:requests", MetricKind::counter, "Requests served.",
                                 "requests",          {"route"},           {},
                                 GaugeMode::livemax};

// The handoff a launcher with the output "unit.alpha" (unit_two_names.so)
// writes, read back from the environment as a spawned producer reads it.
ProducerHandoff handoff_through_environment(const PluginDir& plugins, const TempDir& run_dir) {
  plugins.add_plugin("unit_two_names.so");
  ProducerHandoff handoff;
  handoff.outputs.push_back({"unit.alpha", boost::json::object{}});
  handoff.plugin_dirs = {plugins.str()};
  handoff.run_dir = run_dir.str();
  handoff.queue_size = 1024;
  handoff.shutdown_budget = std::chrono::seconds(2);
  ::unsetenv(kHandoffFileEnv);
  ::setenv(kHandoffFdEnv, std::to_string(write_handoff_memfd(handoff)).c_str(), 1);
  return read_handoff_from_environment();
}

bool has_file_starting(const std::filesystem::path& dir, const std::string& prefix) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

TEST_CASE(
    "a producer attaches through the handoff, registers the plugins again and closes with its "
    "summary in the run directory") {
  PluginDir plugins;
  TempDir run_dir;
  ProducerOptions options;
  options.name = "scheduler-0";
  options.handoff = handoff_through_environment(plugins, run_dir);
  ProducerRuntime producer(std::move(options));
  CHECK(producer.shutdown_budget() == std::chrono::seconds(2));
  CHECK(has_file_starting(run_dir.path(), "scheduler-0_" + std::to_string(::getpid())));

  const Counter requests = producer.pipeline().collector().counter(kRequests).labels("/");
  for (int i = 0; i < 3; ++i) requests.inc();

  const ProducerShutdownReport report = producer.close();
  CHECK(report.closed_in_time);
  CHECK(report.summary.process == "scheduler-0");
  CHECK(report.summary.pid == ::getpid());
  REQUIRE(report.summary.outputs.size() == 1);
  CHECK(report.summary.outputs[0].name == "unit.alpha");
  CHECK(report.summary.outputs[0].accepted == 3);
  CHECK(report.summary.outputs[0].delivered == 3);
  CHECK(report.unstored.series == 0);

  const std::vector<ProcessSummary> left = read_process_summaries(run_dir.path());
  REQUIRE(left.size() == 1);
  CHECK(left[0].process == "scheduler-0");
  REQUIRE(left[0].outputs.size() == 1);
  CHECK(left[0].outputs[0].delivered == 3);

  ScrapeSources sources;
  sources.run_dir = run_dir.path();
  CHECK_THAT(render_exposition(merge_scrape(sources)),
             Catch::Contains("myengine:requests_total{route=\"/\"} 3"));

  // Closed once: a second close returns the first report.
  CHECK(producer.close(std::chrono::seconds(0)).summary.outputs[0].delivered == 3);
}

TEST_CASE("a producer's name is plain in the file names of the run directory") {
  TempDir run_dir;
  ProducerOptions options;
  options.name = "engine/producer 1";
  options.handoff.run_dir = run_dir.str();
  ProducerRuntime producer(std::move(options));
  CHECK(producer.name() == "engine_producer_1");
  CHECK(has_file_starting(run_dir.path(), "engine_producer_1_"));
}

TEST_CASE("a standalone producer leaves no summary in the engine's shared directory") {
  TempDir shared;
  ProducerOptions options;
  options.name = "producer-a";
  options.standalone = true;
  options.handoff.run_dir = shared.str();
  ProducerRuntime producer(std::move(options));
  producer.pipeline().collector().counter(kRequests).labels("/").inc();
  CHECK(producer.close().summary.process == "producer-a");
  CHECK(has_file_starting(shared.path(), "producer-a_"));
  CHECK_FALSE(has_file_starting(shared.path(), "summary-"));
}

TEST_CASE("a standalone producer refuses a shared directory that is not one") {
  TempDir parent;
  ProducerOptions options;
  options.standalone = true;
  options.handoff.run_dir = (parent.path() / "missing").string();
  try {
    ProducerRuntime producer(std::move(options));
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().file == (parent.path() / "missing").string());
    CHECK_THAT(error.what(), Catch::Contains("not a directory"));
  }
}
