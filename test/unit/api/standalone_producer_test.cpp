// standalone_producer_test.cpp — processes that record with no Launcher, as
// prometheus_client's multiprocess and single-process modes do: a shared
// directory that any process renders, a process's memory, a bad directory.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "temp_dir.hpp"
#include "tokenspeed/metrics/metrics.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;

const MetricDefinition kTokens{"engine:tokens",   MetricKind::counter, "Tokens generated.",
                               "tokens",          {"model"},           {},
                               GaugeMode::livemax};
const MetricDefinition kRunning{
    "engine:running",  MetricKind::gauge, "Running requests.", "requests", {}, {},
    GaugeMode::livesum};

}  // namespace

TEST_CASE("standalone processes sharing a directory are rendered together by any of them",
          "[fork]") {
  TempDir dir;
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    int status = 0;
    try {
      Producer producer("scheduler", StandaloneRecording{dir.path().string()});
      producer.recorder().counter(kTokens).labels("llama").inc(30);
      producer.close(std::chrono::seconds(1));
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) == 0);

  // A process that records nothing renders what the child left.
  CHECK_THAT(render_metric_files(dir.path().string()),
             Catch::Contains("engine:tokens_total{model=\"llama\"} 30"));

  Producer producer("api", StandaloneRecording{dir.path().string()});
  producer.recorder().counter(kTokens).labels("llama").inc(12);
  producer.recorder().gauge(kRunning).labels().set(3);
  const std::string scrape = producer.render_metrics();
  CHECK_THAT(scrape, Catch::Contains("engine:tokens_total{model=\"llama\"} 42"));
  CHECK_THAT(scrape, Catch::Contains("engine:running 3"));
  CHECK(render_metric_files(dir.path().string()) == scrape);
  // Nothing of a Launcher's is left in the engine's directory: only metric files.
  producer.close(std::chrono::seconds(1));
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    CHECK(entry.path().extension() == ".db");
  }
}

TEST_CASE("a standalone process without a directory renders its own series from memory") {
  TempDir dir;
  Producer producer("only", StandaloneRecording{});
  CHECK(producer.enabled());
  producer.recorder().counter(kTokens).labels("qwen").inc(5);
  CHECK_THAT(producer.render_metrics(), Catch::Contains("engine:tokens_total{model=\"qwen\"} 5"));
  producer.close(std::chrono::seconds(1));
}

TEST_CASE("a shared directory that does not exist is a startup error naming it") {
  TempDir dir;
  const std::string missing = (dir.path() / "absent").string();
  try {
    Producer producer("w", StandaloneRecording{missing});
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.file() == missing);
    CHECK_THAT(error.what(), Catch::Contains("not a directory"));
  }
  CHECK(render_metric_files(missing).empty());
}
