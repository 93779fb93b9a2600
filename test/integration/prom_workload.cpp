// prom_workload.cpp — test program for the Prometheus integration tests.
//   prom-workload catalog
//       prints the exposition of the whole engine catalog (every family with
//       at least one series) plus the reporter self-metrics, for promtool.
//   prom-workload replay SCRIPT [BASE_DIR]
//       forks one producer process per process index of SCRIPT; each records
//       its operations through a Collector into its multiprocess file, then
//       waits. The launcher serves the merged /metrics on 127.0.0.1 (port 0)
//       and prints "port N" and "pid I PID", then "ready". Commands on stdin:
//       "kill I" (SIGKILL producer I), "exit I" (let producer I exit
//       normally), "quit" (or end of input). Each command is answered "ok".
// Script lines (fields separated by spaces; label values percent-encoded,
// lists comma-separated, "-" for an empty list):
//   metric NAME counter|gauge|histogram|native_histogram MODE LABEL_NAMES BUCKETS HELP...
//   (native_histogram: exponential buckets, the default options)
//   op PROC inc|set|observe NAME LABEL_VALUES VALUE [WEIGHT]
// TSM_WORKLOAD_VIEWS, when set, names a views file (--metrics-views) that
// every producer applies.
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <signal.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "config/metric_views.hpp"
#include "pipeline/collector.hpp"
#include "core/in_process_metric_store.hpp"
#include "core/metric_catalog.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/prometheus_merge.hpp"
#include "prometheus/scrape/reporter_self_metrics.hpp"

using namespace tokenspeed::metrics;

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  if (text == "-") return out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, separator)) out.push_back(item);
  return out;
}

std::string percent_decode(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      out.push_back(static_cast<char>(std::stoi(text.substr(i + 1, 2), nullptr, 16)));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

GaugeMode parse_mode(const std::string& mode) {
  for (GaugeMode m : {GaugeMode::livemax, GaugeMode::livesum, GaugeMode::max, GaugeMode::min,
                      GaugeMode::sum, GaugeMode::all, GaugeMode::liveall}) {
    if (to_string(m) == mode) return m;
  }
  throw std::runtime_error("unknown gauge mode " + mode);
}

struct Operation {
  int process = 0;
  std::string kind;  // inc, set, observe
  std::string metric;
  std::vector<std::string> labels;
  double value = 0;
  std::uint64_t weight = 1;
};

struct Script {
  std::deque<MetricDefinition> metrics;  // stable addresses
  std::vector<Operation> operations;
  int processes = 0;

  const MetricDefinition& find(const std::string& name) const {
    for (const MetricDefinition& metric : metrics) {
      if (metric.name == name) return metric;
    }
    throw std::runtime_error("script: unknown metric " + name);
  }
};

Script read_script(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  Script script;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string tag;
    if (!(fields >> tag) || tag[0] == '#') continue;
    if (tag == "metric") {
      MetricDefinition metric;
      std::string kind, mode, labels, buckets;
      fields >> metric.name >> kind >> mode >> labels >> buckets;
      std::getline(fields >> std::ws, metric.help);
      metric.kind = kind == "counter" ? MetricKind::counter
                    : kind == "gauge" ? MetricKind::gauge
                                      : MetricKind::histogram;
      if (kind == "native_histogram") metric.exponential = ExponentialHistogramOptions{};
      metric.gauge_mode = parse_mode(mode);
      metric.label_names = split(labels, ',');
      for (const std::string& bound : split(buckets, ','))
        metric.buckets.push_back(std::stod(bound));
      script.metrics.push_back(checked_definition(std::move(metric)));  // as the collector has it
    } else if (tag == "op") {
      Operation op;
      std::string labels;
      fields >> op.process >> op.kind >> op.metric >> labels >> op.value;
      if (!(fields >> op.weight)) op.weight = 1;
      for (const std::string& value : split(labels, ','))
        op.labels.push_back(percent_decode(value));
      script.processes = std::max(script.processes, op.process + 1);
      script.operations.push_back(std::move(op));
    }
  }
  return script;
}

void replay(const Script& script, int process, Collector& collector) {
  for (const Operation& op : script.operations) {
    if (op.process != process) continue;
    const MetricDefinition& metric = script.find(op.metric);
    std::vector<std::string_view> values(op.labels.begin(), op.labels.end());
    if (op.kind == "inc")
      collector.counter(metric).labels(std::span<const std::string_view>(values)).inc(op.value);
    else if (op.kind == "set")
      collector.gauge(metric).labels(std::span<const std::string_view>(values)).set(op.value);
    else
      collector.histogram(metric)
          .labels(std::span<const std::string_view>(values))
          .observe(op.value, op.weight);
  }
}

int run_catalog() {
  InProcessMetricStore store;
  Collector collector(store);
  for (const MetricDefinition& metric : tokenspeed_catalog()) {
    std::vector<std::string> values;
    for (const std::string& name : metric.label_names)
      values.push_back(name == "dp_rank"   ? std::string("0")
                       : name == "app_key" ? std::string("key \"q\" \\ \n2")  // escaping
                                           : "v-" + name);
    std::vector<std::string_view> views(values.begin(), values.end());
    switch (metric.kind) {
      case MetricKind::counter:
        collector.counter(metric).labels(std::span<const std::string_view>(views)).inc(3);
        break;
      case MetricKind::gauge:
        collector.gauge(metric).labels(std::span<const std::string_view>(views)).set(0.25);
        break;
      case MetricKind::histogram:
        collector.histogram(metric)
            .labels(std::span<const std::string_view>(views))
            .observe(metric.buckets.front(), 3);
        collector.histogram(metric)
            .labels(std::span<const std::string_view>(views))
            .observe(metric.buckets.back() * 2, 1);
        break;
      case MetricKind::summary:
        collector.summary(metric).labels(std::span<const std::string_view>(views)).observe(0.5, 3);
        break;
    }
  }
  ReporterSelfMetrics self;
  self.set_source([] { return std::vector<OutputSelfFigures>{{"jsonl", 10, 1, 2, 3, 4}}; });
  std::vector<const MetricDefinition*> catalog = catalog_pointers(tokenspeed_catalog());
  for (const MetricDefinition& metric : reporter_self_metric_definitions())
    catalog.push_back(&metric);
  ScrapeSources sources;
  sources.catalog = catalog;
  sources.local_store = &store;
  sources.extra = [&](PrometheusMerge& merge) { self.add_to(merge); };
  const std::string text = render_exposition(merge_scrape(sources));
  std::fwrite(text.data(), 1, text.size(), stdout);
  return 0;
}

struct Child {
  pid_t pid = -1;
  int release = -1;
};

void reap(Child& child, bool kill) {
  if (child.pid <= 0) return;
  if (kill) ::kill(child.pid, SIGKILL);
  if (child.release >= 0) ::close(child.release);
  child.release = -1;
  int status = 0;
  ::waitpid(child.pid, &status, 0);
  child.pid = -1;
}

int run_replay(const std::string& script_path, const std::string& base_dir) {
  const Script script = read_script(script_path);
  // Views are read once, as a launcher reads them, and applied in every
  // producer alike.
  CollectorOptions collector_options;
  if (const char* views = std::getenv("TSM_WORKLOAD_VIEWS")) {
    collector_options.views = std::make_shared<const MetricViews>(read_metric_views(views));
  }
  MultiprocessRunDir run(base_dir.empty() ? default_multiprocess_base_dir()
                                          : std::filesystem::path(base_dir));
  std::vector<Child> children(static_cast<std::size_t>(script.processes));
  for (int i = 0; i < script.processes; ++i) {
    int ready[2], release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) return 1;
    const pid_t pid = ::fork();
    if (pid < 0) return 1;
    if (pid == 0) {
      ::close(ready[0]);
      ::close(release[1]);
      for (int j = 0; j < i; ++j) ::close(children[static_cast<std::size_t>(j)].release);
      {
        MultiprocessMetricStore store({run.path(), "producer"});
        Collector collector(store, nullptr, collector_options);
        replay(script, i, collector);
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
    if (::read(ready[0], &byte, 1) != 1) return 1;
    ::close(ready[0]);
    children[static_cast<std::size_t>(i)] = Child{pid, release[1]};
  }

  // The launcher's catalog is the script's families as the views leave them,
  // as its producers define them.
  std::deque<MetricDefinition> viewed;
  std::vector<const MetricDefinition*> catalog;
  for (const MetricDefinition& metric : script.metrics) {
    if (!collector_options.views) {
      catalog.push_back(&metric);
      continue;
    }
    const ViewedDefinition view = apply_views(*collector_options.views, metric);
    if (view.dropped) continue;
    catalog.push_back(&viewed.emplace_back(checked_definition(view.definition)));
  }
  PrometheusEndpointOptions options;
  options.port = 0;
  // The families, as the launcher serves them: text or protobuf, as asked.
  PrometheusEndpoint endpoint(options, FamiliesHandler([&] {
                                ScrapeSources sources;
                                sources.catalog = catalog;
                                sources.run_dir = run.path();
                                return merge_scrape(sources);
                              }));
  std::printf("port %u\n", endpoint.port());
  for (std::size_t i = 0; i < children.size(); ++i) std::printf("pid %zu %d\n", i, children[i].pid);
  std::printf("dir %s\nready\n", run.path().c_str());
  std::fflush(stdout);

  std::string command;
  while (std::getline(std::cin, command)) {
    std::istringstream in(command);
    std::string verb;
    std::size_t index = 0;
    in >> verb >> index;
    if (verb == "quit") break;
    if ((verb == "kill" || verb == "exit") && index < children.size())
      reap(children[index], verb == "kill");
    std::printf("ok\n");
    std::fflush(stdout);
  }
  endpoint.stop(std::chrono::seconds(10));
  for (Child& child : children) reap(child, false);
  std::printf("ok\n");
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "catalog") return run_catalog();
    if (mode == "replay" && argc > 2) return run_replay(argv[2], argc > 3 ? argv[3] : "");
    std::fprintf(stderr, "usage: prom-workload catalog | replay SCRIPT [BASE_DIR]\n");
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "prom-workload: %s\n", error.what());
    return 1;
  }
}
