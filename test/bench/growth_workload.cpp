// growth_workload.cpp — the scrape side of test/bench/growth_scrape_bench.py:
// a launcher and its producers at a chosen size, on the host's own libraries.
//   growth-workload PROCESSES SERIES BASE_DIR [before]
// forks PROCESSES producer processes; each records SERIES counter series
// and SERIES/10 histogram series (prometheus_client's default buckets)
// through a Collector into its multiprocess file of a fresh run directory
// under BASE_DIR, then waits. The launcher (this process) serves /metrics on
// 127.0.0.1 (port 0) rendered as the launcher renders it (every producer
// file merged, the endpoint's own figures added), and prints
// "endpoint current PORT",
// "launcher PID", "producer PID" per producer, "dir RUN_DIR", then "ready".
// With "before", two more endpoints serve the same files merged by the
// earlier paths ("endpoint mapped-per-scrape PORT", "endpoint before PORT").
// "quit" on stdin (or end of input) lets the producers go and ends it.
// The series are named as growth_scrape_bench.py names prometheus_client's.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <signal.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "core/metric_catalog.hpp"
#include "core/series_bound.hpp"
#include "pipeline/collector.hpp"
#include "prometheus/server/endpoint_figures.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/store/producer_file_mappings.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"

using namespace tokenspeed::metrics;

namespace {

constexpr int kCounterFamilies = 20;
constexpr int kHistogramFamilies = 5;

struct Families {
  std::vector<MetricDefinition> counters;
  std::vector<MetricDefinition> histograms;
};

Families make_families() {
  Families out;
  for (int f = 0; f < kCounterFamilies; ++f) {
    MetricDefinition metric;
    metric.name = "growth_requests_" + std::to_string(f);
    metric.kind = MetricKind::counter;
    metric.help = "Requests of group " + std::to_string(f) + ".";
    metric.label_names = {"model", "series"};
    out.counters.push_back(checked_definition(metric));
  }
  for (int f = 0; f < kHistogramFamilies; ++f) {
    MetricDefinition metric;
    metric.name = "growth_latency_seconds_" + std::to_string(f);
    metric.kind = MetricKind::histogram;
    metric.help = "Latency of group " + std::to_string(f) + ".";
    metric.label_names = {"model", "series"};
    metric.buckets = default_buckets();
    out.histograms.push_back(checked_definition(metric));
  }
  return out;
}

// One producer: every series recorded once, then idle until released.
[[noreturn]] void produce(const std::filesystem::path& run_dir, int series, int index, int ready,
                          int release) {
  const Families families = make_families();
  {
    MultiprocessStoreOptions options;
    options.directory = run_dir;
    options.bound.max_series_per_family = kMaxSeriesPerFamilyLimit;
    MultiprocessMetricStore store(options);
    Collector collector(store);
    const std::vector<double>& buckets = default_buckets();
    for (int i = 0; i < series; ++i) {
      std::string value(1, 's');
      value += std::to_string(i);
      const std::string_view labels[] = {"llama", value};
      collector.counter(families.counters[static_cast<std::size_t>(i % kCounterFamilies)])
          .labels(std::span<const std::string_view>(labels))
          .inc(1 + (i + index) % 7);
    }
    for (int i = 0; i < series / 10; ++i) {
      std::string value(1, 's');
      value += std::to_string(i);
      const std::string_view labels[] = {"llama", value};
      collector.histogram(families.histograms[static_cast<std::size_t>(i % kHistogramFamilies)])
          .labels(std::span<const std::string_view>(labels))
          .observe(buckets[static_cast<std::size_t>(i + index) % buckets.size()]);
    }
    char byte = 'r';
    (void)!::write(ready, &byte, 1);
    while (::read(release, &byte, 1) > 0) {
    }
  }
  ::_exit(0);
}

int run(int processes, int series, const std::string& base_dir, bool compare) {
  MultiprocessRunDir run_dir(base_dir);
  int ready[2], release[2];
  if (::pipe(ready) != 0 || ::pipe(release) != 0) return 1;
  std::vector<pid_t> producers;
  for (int i = 0; i < processes; ++i) {
    const pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      produce(run_dir.path(), series, i, ready[1], release[0]);
    }
    producers.push_back(pid);
  }
  ::close(ready[1]);
  ::close(release[0]);
  for (int i = 0; i < processes; ++i) {
    char byte = 0;
    if (::read(ready[0], &byte, 1) != 1) return 1;
  }
  ::close(ready[0]);

  // What LauncherRuntime::render_metrics does: "current". With "before", the same
  // files also merged by the earlier paths: "mapped-per-scrape" maps each
  // file anew per scrape (no ProducerFileMappings), "before" does that and
  // looks every record up (in-order matching off).
  struct Served {
    std::string name;
    bool match_in_order;
    std::unique_ptr<ProducerFileMappings> mappings;
    std::unique_ptr<PrometheusEndpoint> endpoint;
  };
  std::vector<Served> served;
  served.reserve(3);  // the handlers hold references to the elements
  served.push_back({"current", true, std::make_unique<ProducerFileMappings>(), nullptr});
  if (compare) {
    served.push_back({"mapped-per-scrape", true, nullptr, nullptr});
    served.push_back({"before", false, nullptr, nullptr});
  }
  for (Served& each : served) {
    PrometheusEndpointOptions options;
    options.port = 0;
    each.endpoint = std::make_unique<PrometheusEndpoint>(options, [&run_dir, &each] {
      ScrapeSources sources;
      sources.run_dir = run_dir.path();
      sources.match_in_order = each.match_in_order;
      sources.file_mappings = each.mappings.get();
      const EndpointFigures counters = each.endpoint->figures();
      sources.extra = [counters](PrometheusMerge& merge) {
        add_endpoint_self_figures(merge, counters);
      };
      return render_exposition(merge_scrape(sources));
    });
  }
  for (const Served& each : served)
    std::printf("endpoint %s %u\n", each.name.c_str(), each.endpoint->port());
  std::printf("launcher %d\n", static_cast<int>(::getpid()));
  for (const pid_t pid : producers) std::printf("producer %d\n", static_cast<int>(pid));
  std::printf("dir %s\nready\n", run_dir.path().c_str());
  std::fflush(stdout);

  std::string command;
  while (std::getline(std::cin, command)) {
    if (command == "quit") break;
  }
  for (Served& each : served) each.endpoint->stop(std::chrono::seconds(30));
  ::close(release[1]);
  for (const pid_t pid : producers) {
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool compare = argc == 5 && std::string(argv[4]) == "before";
  if (argc != 4 && !compare) {
    std::fprintf(stderr, "usage: growth-workload PROCESSES SERIES BASE_DIR [before]\n");
    return 2;
  }
  try {
    return run(std::atoi(argv[1]), std::atoi(argv[2]), argv[3], compare);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "growth-workload: %s\n", error.what());
    return 1;
  }
}
