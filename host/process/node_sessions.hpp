// node_sessions.hpp — the launcher-owned node resources of the selected
// outputs: start_node once per output that has one, in selection order, and
// close in reverse order within what remains of the shutdown budget. Launcher
// only; never in a producer.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "process/producer_handoff.hpp"
#include "config/reporter_config.hpp"

namespace tokenspeed::metrics {

// Threading: start and close from the launcher's main thread.
class NodeSessions {
 public:
  using WarningSink = std::function<void(const std::string&)>;
  explicit NodeSessions(WarningSink warn);
  ~NodeSessions();  // closes with a zero budget when close() was not called
  NodeSessions(const NodeSessions&) = delete;
  NodeSessions& operator=(const NodeSessions&) = delete;

  // Runs start_node for each output that has one and returns every output's
  // producer configuration (the copied start_node result, or the normalized
  // configuration itself). When a start_node fails, the sessions started
  // before it are closed within cleanup_budget and StartupError is thrown
  // naming the reporter with the plugin's message.
  std::vector<ProducerOutput> start(const std::vector<SelectedOutput>& outputs,
                                    std::chrono::nanoseconds cleanup_budget);

  // Closes every session, the last started first, each with what remains
  // until deadline; a session that ignores its timeout is abandoned, an error
  // is logged and skips nothing. Repeated calls do nothing.
  void close(std::chrono::steady_clock::time_point deadline) noexcept;

  std::size_t size() const noexcept { return sessions_.size(); }

 private:
  struct Session {
    std::string reporter;
    tsm_node_session handle;
  };
  std::vector<Session> sessions_;  // in order of creation
  WarningSink warn_;
};

}  // namespace tokenspeed::metrics
