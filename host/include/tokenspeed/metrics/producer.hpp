// producer.hpp — a producer: a process the engine started that records,
// attached to its Launcher from the environment, or recording standalone
// (prometheus_client's modes) with no Launcher at all.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "tokenspeed/metrics/recorder.hpp"
#include "tokenspeed/metrics/shutdown_report.hpp"

namespace tokenspeed::metrics {

class ProducerImpl;

// A process that records on its own, with no Launcher: prometheus_client's
// multiprocess mode (every process keeps its file in one shared directory,
// and any process renders all of them) or, without a directory, its
// single-process mode. No output plugin runs and no endpoint is served.
struct StandaloneRecording {
  // The directory every process of the engine records into (the engine's
  // PROMETHEUS_MULTIPROC_DIR); "" keeps this process's series in its memory.
  std::string shared_dir;
};

// The exposition of every process that records into directory (a
// StandaloneRecording's shared_dir, or a Launcher's run directory), merged as a
// Launcher merges its producers: what any process of the engine may serve. "" for
// a directory that does not exist or holds no metric file.
std::string render_metric_files(const std::string& directory);

class Producer {
 public:
  // Attaches from the environment a Launcher exported (or the descriptor a Launcher
  // passed to a producer it spawned): registers the plugins again in this
  // process and creates each output's sink lazily, on its first event. Never
  // runs validate or start_node. name labels this process in reports
  // ("" means "producer-<pid>"). Throws StartupError when the environment has
  // no handoff.
  explicit Producer(std::string name = "");
  // Records standalone (see StandaloneRecording). Throws StartupError when
  // shared_dir is given and is not a directory.
  Producer(std::string name, const StandaloneRecording& standalone);
  ~Producer();  // close() with the handoff's budget, unless called
  Producer(const Producer&) = delete;
  Producer& operator=(const Producer&) = delete;

  Recorder& recorder() noexcept;
  bool enabled() const noexcept;
  // The merged exposition of every process of the node (or of the shared
  // directory), as a scrape of the Launcher returns it without the endpoint's
  // own figures; standalone without a directory, this process's series.
  std::string render_metrics() const;

  // Drains and closes this process's sinks within budget and leaves its
  // report for the Launcher. Repeated calls return the first report.
  ShutdownReport close(std::chrono::nanoseconds budget);
  ShutdownReport close();  // with the budget the Launcher handed over

 private:
  std::unique_ptr<ProducerImpl> impl_;
};

}  // namespace tokenspeed::metrics
