// example_engine.cpp — an inference engine in miniature that embeds
// tokenspeed-metrics: its launcher takes the metrics flags out of its own
// command line, starts the metrics node, starts two worker processes itself
// (posix_spawn of its own executable), and serves /metrics over everything
// they record under the engine's own metric names.
//
//   example-engine [--workers N] [--requests N] [metrics flags]
//
// After the workers finish it prints "workers finished" and serves /metrics
// until a line arrives on stdin, then closes and prints the summary table.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <tokenspeed/metrics/metrics.hpp>

extern char** environ;

namespace tsm = tokenspeed::metrics;

namespace {

// The engine's own metrics: none of them is in the TokenSpeed catalog.
const tsm::MetricDefinition kGeneratedTokens{"example:generated_tokens", tsm::MetricKind::counter,
                                             "Tokens generated.",        "tokens",
                                             {"worker", "model"},        {},
                                             tsm::GaugeMode::livemax};
const tsm::MetricDefinition kStepLatency{"example:step_latency_seconds",
                                         tsm::MetricKind::histogram,
                                         "Latency of one decoding step.",
                                         "seconds",
                                         {"worker"},
                                         {0.01, 0.05, 0.1},
                                         tsm::GaugeMode::livemax};
const tsm::MetricDefinition kBusy{"example:busy_slots",
                                  tsm::MetricKind::gauge,
                                  "Decoding slots in use.",
                                  "slots",
                                  {"worker"},
                                  {},
                                  tsm::GaugeMode::livesum};

// A worker's whole life: attach, record, close. Worker i generates i + 1
// tokens per request and takes 0.02 s (two tokens per observation) per step.
int run_worker(int index, int requests) {
  tsm::Producer producer("worker-" + std::to_string(index));
  tsm::Recorder& metrics = producer.recorder();
  const std::string name = std::to_string(index);
  const tsm::Counter tokens = metrics.counter(kGeneratedTokens).labels(name, "tiny");
  const tsm::Histogram step = metrics.histogram(kStepLatency).labels(name);
  const tsm::Gauge busy = metrics.gauge(kBusy).labels(name);
  for (int request = 0; request < requests; ++request) {
    busy.inc();
    tokens.inc(index + 1);
    step.observe(0.02, 2);
    busy.dec();
  }
  busy.set(index);  // what the worker leaves behind
  producer.close();
  return 0;
}

pid_t start_worker(const char* self, int index, int requests) {
  const std::string index_text = std::to_string(index);
  const std::string requests_text = std::to_string(requests);
  std::vector<char*> argv{const_cast<char*>(self),
                          const_cast<char*>("--worker"),
                          const_cast<char*>(index_text.c_str()),
                          const_cast<char*>("--requests"),
                          const_cast<char*>(requests_text.c_str()),
                          nullptr};
  pid_t pid = 0;
  // The launcher exported its producer environment: a spawned process inherits it.
  const int error = ::posix_spawn(&pid, self, nullptr, nullptr, argv.data(), environ);
  if (error != 0) {
    std::fprintf(stderr, "example-engine: cannot start a worker: %s\n", std::strerror(error));
    return -1;
  }
  return pid;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    // The metrics flags are the host's; what remains is the engine's.
    const tsm::Options options = tsm::extract_metrics_options(argc, argv);
    int workers = 2;
    int requests = 1000;
    int worker_index = -1;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--help") {
        std::cout << "usage: example-engine [--workers N] [--requests N] [metrics flags]\n\n"
                  << tsm::metrics_options_help();
        return 0;
      }
      if (i + 1 >= argc) {
        std::fprintf(stderr, "example-engine: unknown argument '%s'\n", arg.c_str());
        return 2;
      }
      if (arg == "--workers") {
        workers = std::stoi(argv[++i]);
      } else if (arg == "--requests") {
        requests = std::stoi(argv[++i]);
      } else if (arg == "--worker") {
        worker_index = std::stoi(argv[++i]);
      } else {
        std::fprintf(stderr, "example-engine: unknown argument '%s'\n", arg.c_str());
        return 2;
      }
    }
    if (worker_index >= 0) return run_worker(worker_index, requests);

    tsm::Launcher launcher(options);
    std::cout << "metrics: " << (launcher.metrics_url().empty() ? "-" : launcher.metrics_url())
              << std::endl;
    launcher.export_producer_environment();
    std::vector<pid_t> pids;
    for (int i = 0; i < workers; ++i) pids.push_back(start_worker(argv[0], i, requests));
    int failed = 0;
    for (const pid_t pid : pids) {
      int status = 0;
      if (pid < 0 || ::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
          WEXITSTATUS(status) != 0) {
        ++failed;
      }
    }
    std::cout << "workers finished (" << failed << " failed)" << std::endl;
    std::string line;
    std::getline(std::cin, line);
    const tsm::ShutdownReport report = launcher.close();
    std::cout << report.table << std::flush;
    return failed == 0 ? 0 : 1;
  } catch (const tsm::StartupError& error) {
    std::fprintf(stderr, "example-engine: %s\n", error.what());
    return tsm::kStartupErrorExitStatus;
  }
}
