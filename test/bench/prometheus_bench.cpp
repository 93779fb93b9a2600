// prometheus_bench.cpp — what the built-in Prometheus output costs: a scrape
// of 10,000 series written by 4 producer processes (merge, render, gzip,
// and the whole HTTP round trip), and one update through the collector with
// the multi-process store versus the in-process store.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <tokenspeed/kit/gzip.hpp>

#include "pipeline/collector.hpp"
#include "core/in_process_metric_store.hpp"
#include "core/metric_catalog.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

using namespace tokenspeed::metrics;

namespace {

constexpr int kSeries = 10'000;
constexpr int kProcesses = 4;

// The label values of series i: spread over every family of the catalog.
std::vector<std::string> series_labels(const MetricDefinition& metric, int i) {
  std::vector<std::string> values;
  for (const std::string& name : metric.label_names) {
    if (name == "model_name")
      values.push_back("model-" + std::to_string(i));
    else if (name == "dp_rank")
      values.push_back(std::to_string(i % 8));
    else
      values.push_back("default");
  }
  return values;
}

// Four producer processes, each writing all 10,000 series (so the merge
// folds 40,000 records), alive while the benchmarks run.
struct Producers {
  std::unique_ptr<MultiprocessRunDir> run;
  std::vector<std::pair<pid_t, int>> children;

  Producers() {
    const auto base =
        std::filesystem::temp_directory_path() / ("tsm-bench-" + std::to_string(::getpid()));
    run = std::make_unique<MultiprocessRunDir>(base);
    const auto& catalog = tokenspeed_catalog();
    for (int p = 0; p < kProcesses; ++p) {
      int ready[2], release[2];
      if (::pipe(ready) != 0 || ::pipe(release) != 0) std::abort();
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(ready[0]);
        ::close(release[1]);
        for (const auto& child : children) ::close(child.second);
        {
          MultiprocessMetricStore store({run->path()});
          Collector collector(store);
          for (int i = 0; i < kSeries; ++i) {
            const MetricDefinition& metric = catalog[static_cast<std::size_t>(i) % catalog.size()];
            const auto values = series_labels(metric, i);
            const std::vector<std::string_view> views(values.begin(), values.end());
            const std::span<const std::string_view> labels(views);
            switch (metric.kind) {
              case MetricKind::counter:
                collector.counter(metric).labels(labels).inc(i + p);
                break;
              case MetricKind::gauge:
                collector.gauge(metric).labels(labels).set(i * 0.5 + p);
                break;
              case MetricKind::histogram:
                collector.histogram(metric).labels(labels).observe(
                    metric.buckets[static_cast<std::size_t>(i) % metric.buckets.size()], 3);
                break;
            }
          }
          char byte = 'r';
          (void)!::write(ready[1], &byte, 1);
          while (::read(release[0], &byte, 1) > 0) {
          }
        }
        ::_exit(0);
      }
      ::close(ready[1]);
      ::close(release[0]);
      char byte = 0;
      if (::read(ready[0], &byte, 1) != 1) std::abort();
      ::close(ready[0]);
      children.emplace_back(pid, release[1]);
    }
  }

  ~Producers() {
    for (const auto& [pid, release] : children) {
      ::close(release);
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
    const auto base = run->path().parent_path();
    run.reset();
    std::error_code ec;
    std::filesystem::remove(base, ec);
  }
};

Producers* producers = nullptr;

ScrapeSources sources() {
  ScrapeSources s;
  s.catalog = catalog_pointers(tokenspeed_catalog());
  s.run_dir = producers->run->path();
  return s;
}

void BM_ScrapeMerge(benchmark::State& state) {
  const ScrapeSources s = sources();
  std::size_t series = 0;
  for (auto _ : state) {
    auto families = merge_scrape(s);
    series = 0;
    for (const auto& family : families) series += family.series.size();
    benchmark::DoNotOptimize(families);
  }
  state.counters["series"] = static_cast<double>(series);
}
BENCHMARK(BM_ScrapeMerge)->Unit(benchmark::kMillisecond);

void BM_ScrapeMergeRender(benchmark::State& state) {
  const ScrapeSources s = sources();
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = render_exposition(merge_scrape(s));
    bytes = text.size();
    benchmark::DoNotOptimize(text.data());
  }
  state.counters["response_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ScrapeMergeRender)->Unit(benchmark::kMillisecond);

void BM_ScrapeMergeRenderGzip(benchmark::State& state) {
  const ScrapeSources s = sources();
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string body = kit::gzip_compress(render_exposition(merge_scrape(s)), 1);
    bytes = body.size();
    benchmark::DoNotOptimize(body.data());
  }
  state.counters["response_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_ScrapeMergeRenderGzip)->Unit(benchmark::kMillisecond);

// The whole round trip: GET /metrics over loopback on a kept-alive connection.
void BM_ScrapeHttp(benchmark::State& state) {
  namespace http = boost::beast::http;
  const ScrapeSources s = sources();
  PrometheusEndpointOptions options;
  options.port = 0;
  PrometheusEndpoint endpoint(options, [&s] { return render_exposition(merge_scrape(s)); });
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  socket.connect({boost::asio::ip::make_address("127.0.0.1"), endpoint.port()});
  boost::beast::flat_buffer buffer;
  std::size_t bytes = 0;
  for (auto _ : state) {
    http::request<http::empty_body> request{http::verb::get, "/metrics", 11};
    request.set(http::field::host, "127.0.0.1");
    if (state.range(0) != 0) request.set(http::field::accept_encoding, "gzip");
    http::write(socket, request);
    http::response_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    http::read(socket, buffer, parser);
    bytes = parser.get().body().size();
  }
  state.counters["response_bytes"] = static_cast<double>(bytes);
  state.SetLabel(state.range(0) != 0 ? "gzip" : "identity");
}
BENCHMARK(BM_ScrapeHttp)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

// One counter increment / histogram observation through the collector, with
// no external output selected (the Prometheus aggregate only).
template <class Store>
struct UpdateFixture {
  std::unique_ptr<Store> store;
  std::unique_ptr<Collector> collector;
  Counter counter;
  Histogram histogram;
  std::unique_ptr<MultiprocessRunDir> run;

  UpdateFixture() {
    if constexpr (std::is_same_v<Store, MultiprocessMetricStore>) {
      run = std::make_unique<MultiprocessRunDir>(std::filesystem::temp_directory_path() /
                                                 ("tsm-bench-upd-" + std::to_string(::getpid())));
      store = std::make_unique<Store>(MultiprocessStoreOptions{run->path()});
    } else {
      store = std::make_unique<Store>();
    }
    collector = std::make_unique<Collector>(*store);
    const auto& catalog = tokenspeed_catalog();
    for (const MetricDefinition& metric : catalog) {
      const auto values = series_labels(metric, 0);
      const std::vector<std::string_view> views(values.begin(), values.end());
      const std::span<const std::string_view> labels(views);
      if (metric.name == "tokenspeed:generation_tokens")
        counter = collector->counter(metric).labels(labels);
      if (metric.name == "tokenspeed:inter_token_latency_seconds")
        histogram = collector->histogram(metric).labels(labels);
    }
  }
  ~UpdateFixture() {
    collector.reset();
    store.reset();
    if (run) {
      const auto base = run->path().parent_path();
      run.reset();
      std::error_code ec;
      std::filesystem::remove(base, ec);
    }
  }
};

template <class Store>
void BM_CounterInc(benchmark::State& state) {
  UpdateFixture<Store> fixture;
  for (auto _ : state) fixture.counter.inc(1.0);
  state.SetItemsProcessed(state.iterations());
}

template <class Store>
void BM_HistogramObserve(benchmark::State& state) {
  UpdateFixture<Store> fixture;
  double value = 0.001;
  for (auto _ : state) {
    fixture.histogram.observe(value, 3);
    value = value > 1 ? 0.001 : value * 1.7;
  }
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK_TEMPLATE(BM_CounterInc, InProcessMetricStore);
BENCHMARK_TEMPLATE(BM_CounterInc, MultiprocessMetricStore);
BENCHMARK_TEMPLATE(BM_HistogramObserve, InProcessMetricStore);
BENCHMARK_TEMPLATE(BM_HistogramObserve, MultiprocessMetricStore);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Producers running;
  producers = &running;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  producers = nullptr;
  return 0;
}
