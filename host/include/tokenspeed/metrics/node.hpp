// node.hpp — the roles of an engine's processes. A Node is the launcher (or
// the only process of a single-process engine): it validates the whole
// configuration, runs start_node, serves /metrics and hands its workers what
// they need. A Worker is a process the engine started that attaches to its
// Node from the environment. Each gives the process's Recorder. Startup and
// shutdown only; recording goes through the handles of recording.hpp.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenspeed/metrics/options.hpp"
#include "tokenspeed/metrics/recording.hpp"

namespace tokenspeed::metrics {

// The families of one process. Threading: any thread; creating a family locks.
class Recorder {
 public:
  // The family of definition: created on the first call (the definition is
  // checked: see checked_definition), the same object for every later call
  // with an equal definition. Throws std::invalid_argument when the kind does
  // not match, the definition is invalid, the name is already defined
  // differently in this process, or another family of this process claims one
  // of its sample names (a counter c and a gauge c_total). The definition reaches /metrics and
  // every output, in every process that records it.
  CounterFamily& counter(const MetricDefinition& definition);
  GaugeFamily& gauge(const MetricDefinition& definition);
  HistogramFamily& histogram(const MetricDefinition& definition);
  // A summary (kind summary: a count and a sum, no buckets) is observed
  // through Histogram handles, as a histogram is.
  HistogramFamily& summary(const MetricDefinition& definition);

  // Every definition of a set (the TokenSpeed catalog, say), by its kind.
  void define(const std::vector<MetricDefinition>& definitions);

  // The host's own; an engine gets its Recorder from a Node or a Worker.
  explicit Recorder(Collector* collector) noexcept : collector_(collector) {}

 private:
  Collector* collector_;
};

// What one process reported of one output at shutdown.
struct OutputReport {
  std::string process;  // "launcher", the worker's name
  pid_t pid = 0;
  std::string output;
  std::uint64_t accepted = 0;             // offered by the engine's threads
  std::uint64_t delivered = 0;            // emit returned success
  std::uint64_t dropped_queue_full = 0;   // the thread's queue was full
  std::uint64_t dropped_disabled = 0;     // the sink was disabled or never created
  std::uint64_t dropped_after_close = 0;  // recorded after close began
  std::uint64_t discarded_at_close = 0;   // still queued when the budget ran out
  std::uint64_t lost_in_helper = 0;       // "isolation": "process": inside a crashed helper
  bool failed = false;                    // disabled, not created, close failed or abandoned
  // What the output's plugin reported of the events delivered to it (false:
  // its plugin reports no figures, and the five below stay 0).
  bool plugin_reported = false;
  std::uint64_t plugin_sent = 0;     // accepted by the back end
  std::uint64_t plugin_refused = 0;  // over a limit of the plugin, or not representable
  std::uint64_t plugin_lost = 0;     // given up: rejected, queue full, close deadline
  std::uint64_t plugin_retries = 0;  // failed attempts tried again
  std::uint64_t plugin_pending = 0;  // still held by the plugin when it closed
};

struct ShutdownReport {
  std::vector<OutputReport> outputs;  // by process, then output
  bool closed_in_time = true;         // every sink of this process closed within the budget
  std::chrono::nanoseconds elapsed{0};
  std::string table;  // the summary table, as tokenspeed-metrics simulate prints it
  // This process's series that its Prometheus store kept in memory because
  // the metric file could not grow (a full file system), and the events
  // recorded into them: those are not on /metrics (docs/reliability.md).
  std::uint64_t unstored_series = 0;
  std::uint64_t unstored_events = 0;
};

class NodeImpl;
class WorkerImpl;

// A process that records on its own, with no Node: prometheus_client's
// multiprocess mode (every process keeps its file in one shared directory,
// and any process renders all of them) or, without a directory, its
// single-process mode. No output plugin runs and no endpoint is served.
struct StandaloneRecording {
  // The directory every process of the engine records into (the engine's
  // PROMETHEUS_MULTIPROC_DIR); "" keeps this process's series in its memory.
  std::string shared_dir;
};

// The exposition of every process that records into directory (a
// StandaloneRecording's shared_dir, or a Node's run directory), merged as a
// Node merges its workers: what any process of the engine may serve. "" for
// a directory that does not exist or holds no metric file.
std::string render_metric_files(const std::string& directory);

// Threading: one control thread calls everything but recorder(), which any
// thread may use.
class Node {
 public:
  // Validates everything (StartupError with reporter, file and key), loads
  // the plugins (once for this process), runs start_node, creates this
  // process's outputs, serves /metrics when prometheus is selected, and
  // writes the handoff for workers. With metrics disabled nothing is loaded
  // and every handle does nothing.
  explicit Node(const Options& options);
  ~Node();  // close() with the configured shutdown timeout, unless called
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  Recorder& recorder() noexcept;
  bool enabled() const noexcept;
  // "http://127.0.0.1:8000/metrics", or "" when no endpoint runs.
  std::string metrics_url() const;
  // The merged exposition of the node, as a scrape returns it.
  std::string render_metrics() const;

  // For workers the engine starts itself: the variables to put into their
  // environment (a file of the private run directory, never argv).
  std::vector<std::pair<std::string, std::string>> worker_environment() const;
  // Puts them into this process's environment, so that every process it
  // starts from now on inherits them (multiprocessing, posix_spawn, fork).
  void export_worker_environment() const;
  // Or let the Node start a worker: argv[0] is the executable; its only
  // inherited descriptor besides 0-2 carries the handoff. Returns its pid;
  // close() stops it (SIGTERM, then SIGKILL at the deadline).
  pid_t spawn_worker(const std::string& name, const std::vector<std::string>& argv);

  // Stops the workers it spawned, closes this process's sinks and then the
  // node sessions, all within budget; stops the endpoint and removes the run
  // directory. Workers the engine started should close before this: their
  // reports are in the result when they did. Repeated calls return the
  // first report.
  ShutdownReport close(std::chrono::nanoseconds budget);
  ShutdownReport close();  // with the configured --metrics-shutdown-timeout

 private:
  std::unique_ptr<NodeImpl> impl_;
};

class Worker {
 public:
  // Attaches from the environment a Node exported (or the descriptor a Node
  // passed to a worker it spawned): registers the plugins again in this
  // process and creates each output's sink lazily, on its first event. Never
  // runs validate or start_node. name labels this process in reports
  // ("" means "worker-<pid>"). Throws StartupError when the environment has
  // no handoff.
  explicit Worker(std::string name = "");
  // Records standalone (see StandaloneRecording). Throws StartupError when
  // shared_dir is given and is not a directory.
  Worker(std::string name, const StandaloneRecording& standalone);
  ~Worker();  // close() with the handoff's budget, unless called
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  Recorder& recorder() noexcept;
  bool enabled() const noexcept;
  // The merged exposition of every process of the node (or of the shared
  // directory), as a scrape of the Node returns it without the endpoint's
  // own figures; standalone without a directory, this process's series.
  std::string render_metrics() const;

  // Drains and closes this process's sinks within budget and leaves its
  // report for the Node. Repeated calls return the first report.
  ShutdownReport close(std::chrono::nanoseconds budget);
  ShutdownReport close();  // with the budget the Node handed over

 private:
  std::unique_ptr<WorkerImpl> impl_;
};

}  // namespace tokenspeed::metrics
