// launcher_test.cpp — the roles of an engine's processes through the public API:
// a single-process engine, a launcher whose producers attach from their
// environment, definitions of the engine's own, a producer without a handoff.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "temp_dir.hpp"
#include "tokenspeed/metrics/metrics.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;

Options prometheus_options(const TempDir& dir) {
  Options options;
  options.enable_metrics = true;
  options.port = 0;
  options.multiproc_dir = dir.path().string();
  options.shutdown_timeout = std::chrono::duration<double>(2.0);
  return options;
}

const MetricDefinition kRequests{"myengine:requests", MetricKind::counter, "Requests served.",
                                 "requests",          {"route"},           {},
                                 GaugeMode::livemax};
const MetricDefinition kBatch{
    "myengine:batch_size", MetricKind::histogram, "Batch sizes.", "requests", {}, {1, 4, 16},
    GaugeMode::livemax};
const MetricDefinition kQueue{
    "myengine:queue_depth", MetricKind::gauge, "Queued requests.", "requests", {}, {},
    GaugeMode::livesum};

void clear_handoff_environment() {
  for (const char* variable : {"TOKENSPEED_METRICS_HANDOFF_FD", "TOKENSPEED_METRICS_HANDOFF_FILE",
                               "TOKENSPEED_METRICS_DISABLED"}) {
    ::unsetenv(variable);
  }
}

}  // namespace

TEST_CASE(
    "a single-process engine gets recording and /metrics from one call, with its own metrics") {
  TempDir dir;
  Launcher launcher(prometheus_options(dir));
  REQUIRE(launcher.enabled());
  CHECK_THAT(launcher.metrics_url(), Catch::StartsWith("http://127.0.0.1:"));
  Recorder& metrics = launcher.recorder();
  metrics.counter(kRequests).labels("/v1/chat").inc(3);
  metrics.histogram(kBatch).labels().observe(2, 5);  // five requests in batches of 2
  const Gauge queue = metrics.gauge(kQueue).labels();
  queue.inc(4);
  queue.dec();
  const std::string scrape = launcher.render_metrics();
  CHECK_THAT(scrape, Catch::Contains("# HELP myengine:requests_total Requests served."));
  CHECK_THAT(scrape, Catch::Contains("myengine:requests_total{route=\"/v1/chat\"} 3"));
  CHECK_THAT(scrape, Catch::Contains("myengine:batch_size_bucket{le=\"4\"} 5"));
  CHECK_THAT(scrape, Catch::Contains("myengine:batch_size_sum 10"));
  CHECK_THAT(scrape, Catch::Contains("myengine:queue_depth 3"));
  launcher.close();
}

TEST_CASE(
    "a definition is checked: a counter's _total is dropped, a bad name or a second definition "
    "refused") {
  TempDir dir;
  Launcher launcher(prometheus_options(dir));
  MetricDefinition with_total = kRequests;
  with_total.name = "myengine:requests_total";
  CHECK(launcher.recorder().counter(with_total).definition().name == "myengine:requests");
  CHECK(&launcher.recorder().counter(with_total) == &launcher.recorder().counter(kRequests));

  MetricDefinition bad = kRequests;
  bad.name = "9lives";
  CHECK_THROWS_WITH(launcher.recorder().counter(bad), Catch::Contains("not a valid metric name"));
  MetricDefinition other_labels = kRequests;
  other_labels.label_names = {"model"};
  CHECK_THROWS_WITH(launcher.recorder().counter(other_labels),
                    Catch::Contains("defined differently"));
  MetricDefinition le = kBatch;
  le.label_names = {"le"};
  le.name = "myengine:other";
  CHECK_THROWS_WITH(launcher.recorder().histogram(le), Catch::Contains("reserved"));
  CHECK_THROWS_AS(launcher.recorder().counter(kRequests).labels("a", "b"), std::invalid_argument);
}

// [fork]: the children start threads after forking a process with threads,
// which neither sanitizer survives (TSan cannot follow them; an ASan child
// can inherit the allocator's lock held by a parent thread and hang): the
// sanitizer runs leave this case out.
TEST_CASE("producers the engine starts itself attach from the environment; /metrics sums them",
          "[fork]") {
  TempDir dir;
  clear_handoff_environment();
  Launcher launcher(prometheus_options(dir));
  launcher.export_producer_environment();
  const char* file = std::getenv("TOKENSPEED_METRICS_HANDOFF_FILE");
  REQUIRE(file != nullptr);
  CHECK(std::filesystem::path(file).parent_path().parent_path() == dir.path());

  constexpr int kWorkers = 2;
  pid_t children[kWorkers];
  for (int i = 0; i < kWorkers; ++i) {
    children[i] = ::fork();
    REQUIRE(children[i] >= 0);
    if (children[i] == 0) {
      int status = 0;
      try {
        Producer producer("producer-" + std::to_string(i));
        producer.recorder().counter(kRequests).labels("/v1/chat").inc(10 + i);
        producer.recorder().histogram(kBatch).labels().observe(8, 2);
        producer.close(std::chrono::seconds(1));
      } catch (...) {
        status = 1;
      }
      ::_exit(status);  // never run the parent's destructors in the child
    }
  }
  for (const pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  launcher.recorder().counter(kRequests).labels("/v1/chat").inc(1);
  const std::string scrape = launcher.render_metrics();
  CHECK_THAT(scrape, Catch::Contains("myengine:requests_total{route=\"/v1/chat\"} 22"));
  CHECK_THAT(scrape, Catch::Contains("myengine:batch_size_count 4"));
  CHECK_THAT(scrape, Catch::Contains("myengine:batch_size_sum 32"));
  launcher.close();
  clear_handoff_environment();
}

TEST_CASE("a producer without a handoff gets a clear error") {
  clear_handoff_environment();
  try {
    Producer producer;
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.key() == "TOKENSPEED_METRICS_HANDOFF_FILE");
    CHECK_THAT(error.what(), Catch::Contains("not set"));
  }
}

TEST_CASE(
    "with metrics disabled nothing starts, handles do nothing, and producers attach disabled") {
  clear_handoff_environment();
  Launcher launcher(Options{});
  CHECK_FALSE(launcher.enabled());
  CHECK(launcher.metrics_url().empty());
  const Counter requests = launcher.recorder().counter(kRequests).labels("/");
  CHECK_FALSE(requests);
  requests.inc();  // does nothing, and never crashes
  launcher.export_producer_environment();
  Producer producer;
  CHECK_FALSE(producer.enabled());
  producer.recorder().counter(kRequests).labels("/").inc();
  CHECK(producer.close().outputs.empty());
  clear_handoff_environment();
}

TEST_CASE("the TokenSpeed catalog is a ready-made set of definitions") {
  TempDir dir;
  Launcher launcher(prometheus_options(dir));
  launcher.recorder().define(tokenspeed_catalog());
  launcher.recorder()
      .gauge(tokenspeed_metric("tokenspeed:num_requests_running"))
      .labels("llama", "default", "0")
      .set(7);
  CHECK_THAT(launcher.render_metrics(),
             Catch::Contains("tokenspeed:num_requests_running{model_name=\"llama\",app_key="
                             "\"default\",dp_rank=\"0\"} 7"));
  CHECK_THROWS_AS(tokenspeed_metric("tokenspeed:nothing"), std::out_of_range);
}

// An engine written against the names of earlier releases still compiles,
// with a deprecation warning naming the new one.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("the earlier names Node and Worker are the Launcher and the Producer") {
  STATIC_REQUIRE(std::is_same_v<Node, Launcher>);
  STATIC_REQUIRE(std::is_same_v<Worker, Producer>);
  Node launcher{Options{}};
  CHECK(launcher.worker_environment() == launcher.producer_environment());
}
#pragma GCC diagnostic pop
