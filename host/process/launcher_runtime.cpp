// launcher_runtime.cpp — startup in the order the spec gives (validate, start_node,
// serve, spawn) and shutdown in the reverse one (producers, own sinks, node
// sessions), on one budget.
#include "process/launcher_runtime.hpp"

#include <unistd.h>

#include <cstdio>

#include "process/producer_exit.hpp"

namespace tokenspeed::metrics {
namespace {

// The producers' share of the shutdown budget; the launcher keeps the rest
// for its own sinks and the node sessions.
constexpr double kProducerShare = 0.75;
// A process needs a moment to exit after its sinks are closed.
constexpr std::chrono::milliseconds kProducerExitGrace{100};

}  // namespace

LauncherRuntime::LauncherRuntime(LauncherOptions options) : options_(std::move(options)) {}

LauncherRuntime::~LauncherRuntime() { shutdown(); }

void LauncherRuntime::warn(const std::string& line) const {
  if (options_.warn) {
    options_.warn(line);
  } else {
    std::fprintf(stderr, "tokenspeed-metrics: warning: %s\n", line.c_str());
  }
}

void LauncherRuntime::start() {
  started_ = true;
  auto warn_line = [this](const std::string& line) { warn(line); };
  const MetricsSettings& settings = options_.settings;
  startup_ = load_metrics_startup(settings.given, warn_line);
  const ReporterSelection& selection = startup_.selection;
  const bool enabled = selection.enabled;

  ProducerHandoff handoff;
  if (enabled) {
    prometheus_ = std::make_unique<PrometheusNode>(settings, [this] {
      if (local_) local_->publish_self_figures();
    });
    sessions_ = std::make_unique<NodeSessions>(warn_line);
    producer_outputs_ = sessions_->start(selection.outputs, settings.shutdown_timeout);

    RouterOptions router;
    router.queue_size = settings.queue_size;
    local_ = std::make_unique<ProcessPipeline>(
        *startup_.registry,
        ProcessPipelineOptions{producer_outputs_, prometheus_->run_dir().string(), "launcher",
                               router, settings.max_series_per_family, settings.node_name,
                               /*keep_in_memory_without_file=*/false, startup_.views});

    if (selection.prometheus) prometheus_->serve(settings);
    handoff.outputs = producer_outputs_;
    handoff.plugin_dirs =
        startup_.loader ? startup_.loader->directories() : std::vector<std::string>{};
    handoff.disabled_plugins = PluginSearchOptions::from_environment({}, false).disabled_plugins;
    handoff.allow_insecure_plugins = settings.given.allow_insecure_plugins;
    handoff.run_dir = prometheus_->run_dir().string();
  }
  handoff.queue_size = settings.queue_size;
  handoff.max_series_per_family = settings.max_series_per_family;
  handoff.node_name = settings.node_name;
  handoff.views = startup_.views;
  handoff.shutdown_budget = std::chrono::duration_cast<std::chrono::nanoseconds>(
      settings.shutdown_timeout * kProducerShare);
  handoff_ = handoff;
  if (prometheus_) {
    // For the producers an engine starts itself (fork, posix_spawn, Python
    // multiprocessing): they find it through producer_environment().
    handoff_file_ = prometheus_->run_dir() / "handoff.json";
    write_handoff_file(handoff_file_, handoff_);
  }
  supervisor_.on_exit([this](const ProducerProcess& process) {
    if (local_ && producer_crashed(process))
      local_->count_producer_crash(process.name, signal_label(process.term_signal));
  });
  for (const ProducerSpec& producer : options_.producers) spawn(producer);
}

void LauncherRuntime::spawn(const ProducerSpec& producer) {
  const int fd = write_handoff_memfd(handoff_);
  try {
    supervisor_.spawn(producer, fd);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

std::vector<std::pair<std::string, std::string>> LauncherRuntime::producer_environment() const {
  if (handoff_file_.empty()) return {{kMetricsDisabledEnv, "1"}};
  return {{kHandoffFileEnv, handoff_file_.string()}};
}

std::string LauncherRuntime::metrics_url() const {
  return prometheus_ ? prometheus_->url() : std::string();
}

std::filesystem::path LauncherRuntime::run_dir() const {
  return prometheus_ ? prometheus_->run_dir() : std::filesystem::path();
}

std::string LauncherRuntime::render_metrics() const {
  return prometheus_ ? prometheus_->render() : std::string();
}

void LauncherRuntime::stop_producers() noexcept {
  if (producers_stopped_ || !started_) return;
  producers_stopped_ = true;
  shutdown_begin_ = std::chrono::steady_clock::now();
  const auto deadline = shutdown_begin_ +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            options_.settings.shutdown_timeout * kProducerShare) +
                        kProducerExitGrace;
  report_.producers = supervisor_.stop(deadline);
  for (const ProducerProcess& process : report_.producers) {
    if (process.killed) {
      warn("producer '" + process.name + "' (pid " + std::to_string(process.pid) +
           ") did not exit within the shutdown budget and was killed");
    }
  }
}

LauncherShutdownReport LauncherRuntime::shutdown(std::chrono::nanoseconds budget) noexcept {
  if (!shut_down_) options_.settings.shutdown_timeout = budget;
  return shutdown();
}

LauncherShutdownReport LauncherRuntime::shutdown() noexcept {
  if (shut_down_ || !started_) return report_;
  shut_down_ = true;
  // One budget from the moment shutdown began. When the producers were
  // stopped earlier (and /metrics served a while), the launcher's own steps
  // get their share of the budget from now.
  const bool producers_were_stopped = producers_stopped_;
  stop_producers();
  const auto begin = producers_were_stopped ? std::chrono::steady_clock::now() : shutdown_begin_;
  const auto deadline =
      producers_were_stopped
          ? begin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        options_.settings.shutdown_timeout * (1.0 - kProducerShare))
          : begin + options_.settings.shutdown_timeout;

  // The launcher closes its local sinks before the shared node resources.
  if (local_) {
    const auto remaining = std::max(deadline - std::chrono::steady_clock::now(),
                                    std::chrono::steady_clock::duration::zero());
    report_.launcher_sinks_closed =
        local_->close(std::chrono::duration_cast<std::chrono::nanoseconds>(remaining));
    report_.launcher_sinks = local_->sink_figures();
    write_process_summary(prometheus_->run_dir(),
                          {"launcher", ::getpid(), report_.launcher_sinks, local_->unstored()});
  }
  if (sessions_) sessions_->close(deadline);
  if (prometheus_) {
    prometheus_->stop(std::chrono::milliseconds(500));
    try {
      report_.summaries = read_process_summaries(prometheus_->run_dir());
    } catch (...) {
      // The summary is a courtesy; shutdown goes on.
    }
    prometheus_->remove();
  }
  report_.elapsed = std::chrono::steady_clock::now() - begin;
  return report_;
}

}  // namespace tokenspeed::metrics
