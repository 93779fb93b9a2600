// launcher.cpp — the public Launcher over the host's LauncherRuntime: validation, start_node,
// the endpoint, the producers' handoff and the ordered shutdown.
#include <cstdlib>
#include <optional>

#include "api/engine_options.hpp"
#include "api/shutdown_report.hpp"
#include "process/launcher_runtime.hpp"
#include "tokenspeed/metrics/launcher.hpp"

namespace tokenspeed::metrics {

class LauncherImpl {
 public:
  explicit LauncherImpl(const Options& options) : launcher_(launcher_options_from(options)) {
    launcher_.start();
    if (ProcessPipeline* local = launcher_.local_metrics()) {
      recorder_ = Recorder(&local->collector());
    }
  }

  ShutdownReport close(std::chrono::nanoseconds budget) {
    if (!report_) {
      const LauncherShutdownReport shutdown = launcher_.shutdown(budget);
      report_ = shutdown_report_from(shutdown.summaries);
      report_->closed_in_time = shutdown.launcher_sinks_closed;
      report_->elapsed = shutdown.elapsed;
    }
    return *report_;
  }

  LauncherRuntime launcher_;
  Collector disabled_{nullptr};  // the families of a node with metrics disabled
  Recorder recorder_{&disabled_};
  std::optional<ShutdownReport> report_;
};

Launcher::Launcher(const Options& options) : impl_(std::make_unique<LauncherImpl>(options)) {}

Launcher::~Launcher() {
  if (impl_) close();
}

Recorder& Launcher::recorder() noexcept { return impl_->recorder_; }

bool Launcher::enabled() const noexcept { return impl_->launcher_.selection().enabled; }

std::string Launcher::metrics_url() const { return impl_->launcher_.metrics_url(); }

std::string Launcher::render_metrics() const { return impl_->launcher_.render_metrics(); }

std::vector<std::pair<std::string, std::string>> Launcher::producer_environment() const {
  return impl_->launcher_.producer_environment();
}

void Launcher::export_producer_environment() const {
  for (const char* variable : {kHandoffFdEnv, kHandoffFileEnv, kMetricsDisabledEnv}) {
    ::unsetenv(variable);
  }
  for (const auto& [name, value] : producer_environment()) ::setenv(name.c_str(), value.c_str(), 1);
}

pid_t Launcher::spawn_producer(const std::string& name, const std::vector<std::string>& argv) {
  impl_->launcher_.spawn(ProducerSpec{name, argv});
  return impl_->launcher_.producers().processes().back().pid;
}

ShutdownReport Launcher::close(std::chrono::nanoseconds budget) { return impl_->close(budget); }

ShutdownReport Launcher::close() { return impl_->close(impl_->launcher_.shutdown_timeout()); }

}  // namespace tokenspeed::metrics
