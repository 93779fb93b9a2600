// node.cpp — the public Node over the host's Launcher: validation, start_node,
// the endpoint, the workers' handoff and the ordered shutdown.
#include <cstdlib>
#include <optional>

#include "api/engine_options.hpp"
#include "api/shutdown_report.hpp"
#include "process/launcher.hpp"
#include "tokenspeed/metrics/node.hpp"

namespace tokenspeed::metrics {

class NodeImpl {
 public:
  explicit NodeImpl(const Options& options) : launcher_(launcher_options_from(options)) {
    launcher_.start();
    if (ProcessMetrics* local = launcher_.local_metrics()) {
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

  Launcher launcher_;
  Collector disabled_{nullptr};  // the families of a node with metrics disabled
  Recorder recorder_{&disabled_};
  std::optional<ShutdownReport> report_;
};

Node::Node(const Options& options) : impl_(std::make_unique<NodeImpl>(options)) {}

Node::~Node() {
  if (impl_) close();
}

Recorder& Node::recorder() noexcept { return impl_->recorder_; }

bool Node::enabled() const noexcept { return impl_->launcher_.selection().enabled; }

std::string Node::metrics_url() const { return impl_->launcher_.metrics_url(); }

std::string Node::render_metrics() const { return impl_->launcher_.render_metrics(); }

std::vector<std::pair<std::string, std::string>> Node::worker_environment() const {
  return impl_->launcher_.worker_environment();
}

void Node::export_worker_environment() const {
  for (const char* variable : {kHandoffFdEnv, kHandoffFileEnv, kMetricsDisabledEnv}) {
    ::unsetenv(variable);
  }
  for (const auto& [name, value] : worker_environment()) ::setenv(name.c_str(), value.c_str(), 1);
}

pid_t Node::spawn_worker(const std::string& name, const std::vector<std::string>& argv) {
  impl_->launcher_.spawn(ProducerSpec{name, argv});
  return impl_->launcher_.producers().processes().back().pid;
}

ShutdownReport Node::close(std::chrono::nanoseconds budget) { return impl_->close(budget); }

ShutdownReport Node::close() { return impl_->close(impl_->launcher_.shutdown_timeout()); }

}  // namespace tokenspeed::metrics
