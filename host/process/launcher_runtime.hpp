// launcher_runtime.hpp — what the launcher process of a node runs: the whole startup
// validation, start_node for the outputs that have one, the Prometheus
// endpoint over the per-run directory, the producer processes with their
// handoff, and the ordered shutdown within one budget. Usable by an engine
// that embeds the host library; never on the hot path.
// Tested in test/unit/api/launcher_test.cpp (through Launcher; the CLI's launcher
// tests run it as an operator does).
#pragma once

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/metrics_flags.hpp"
#include "config/metrics_startup.hpp"
#include "process/node_sessions.hpp"
#include "process/process_pipeline.hpp"
#include "process/process_summary.hpp"
#include "process/producer_supervisor.hpp"
#include "prometheus/prometheus_output.hpp"

namespace tokenspeed::metrics {

struct LauncherOptions {
  // The metrics options, checked (check_options): from the flags or from an
  // engine's Options.
  MetricsSettings settings;
  std::vector<ProducerSpec> producers;
  std::function<void(const std::string&)> warn;  // one line each; stderr when empty
};

// What shutdown did, for the summary.
struct LauncherShutdownReport {
  std::vector<ProducerProcess> producers;
  std::vector<SinkFigures> launcher_sinks;
  bool launcher_sinks_closed = true;
  // Every process's summary of its outputs (the launcher's included), read
  // from the run directory before it is removed.
  std::vector<ProcessSummary> summaries;
  std::chrono::nanoseconds elapsed{0};
};

// Threading: one control thread calls start, the accessors and shutdown.
class LauncherRuntime {
 public:
  explicit LauncherRuntime(LauncherOptions options);
  ~LauncherRuntime();  // shutdown() when it was not called
  LauncherRuntime(const LauncherRuntime&) = delete;
  LauncherRuntime& operator=(const LauncherRuntime&) = delete;

  // Validates (exit-2 errors as StartupError), creates the run directory,
  // runs start_node, creates this process's metrics, serves Prometheus when
  // selected, and spawns the producers. On failure everything started so
  // far is closed before the error propagates.
  void start();

  // Starts one more producer after start(), with the handoff descriptor.
  // Throws std::system_error when the process cannot be started.
  void spawn(const ProducerSpec& producer);
  // What a producer that the engine starts itself needs in its environment:
  // TOKENSPEED_METRICS_HANDOFF_FILE naming the run directory's handoff file,
  // or TOKENSPEED_METRICS_DISABLED=1 with metrics disabled. Never argv.
  std::vector<std::pair<std::string, std::string>> producer_environment() const;

  // Metrics of this process (its own sinks); null with metrics disabled.
  ProcessPipeline* local_metrics() noexcept { return local_.get(); }
  // "http://host:port/metrics" ("https://" with TLS), or "" when no
  // endpoint runs.
  std::string metrics_url() const;
  const ReporterSelection& selection() const noexcept { return startup_.selection; }
  // The per-run directory ("" with metrics disabled). Removed at shutdown.
  std::filesystem::path run_dir() const;
  ProducerSupervisor& producers() noexcept { return supervisor_; }
  // The merged exposition, as a text scrape would return it.
  std::string render_metrics() const;

  // The first step of shutdown on its own: asks the producers to stop, waits
  // for them (their share of the budget) and kills the late ones. Their
  // metric files stay, so /metrics keeps serving what they recorded (dead
  // processes' live gauges excepted). Idempotent; shutdown() calls it.
  void stop_producers() noexcept;

  // Asks the producers to stop and waits for them (their share of the
  // budget: three quarters), kills the late ones, closes this process's
  // sinks, then the node sessions in reverse order, within what remains.
  // Then stops the endpoint and removes the run directory. Idempotent.
  LauncherShutdownReport shutdown() noexcept;
  // The same with another budget than --metrics-shutdown-timeout.
  LauncherShutdownReport shutdown(std::chrono::nanoseconds budget) noexcept;
  std::chrono::nanoseconds shutdown_timeout() const noexcept {
    return options_.settings.shutdown_timeout;
  }

 private:
  void warn(const std::string& line) const;

  LauncherOptions options_;
  MetricsStartup startup_;
  std::unique_ptr<NodeSessions> sessions_;
  std::vector<ProducerOutput> producer_outputs_;
  ProducerHandoff handoff_;
  std::filesystem::path handoff_file_;  // in the run directory; empty when disabled
  std::unique_ptr<ProcessPipeline> local_;
  // The run directory and the endpoint; declared after local_, whose figures
  // its scrapes publish, so it stops first.
  std::unique_ptr<PrometheusNode> prometheus_;
  ProducerSupervisor supervisor_;
  bool started_ = false;
  bool shut_down_ = false;
  bool producers_stopped_ = false;
  std::chrono::steady_clock::time_point shutdown_begin_{};
  LauncherShutdownReport report_;
};

}  // namespace tokenspeed::metrics
