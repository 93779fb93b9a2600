// node_sessions.cpp — start_node in order, close in reverse, each close on a
// deadline so a plugin that ignores its timeout cannot hold the launcher.
#include "process/node_sessions.hpp"

#include <algorithm>

#include "core/abi_buffer.hpp"
#include "process/deadline_call.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {

NodeSessions::NodeSessions(WarningSink warn) : warn_(std::move(warn)) {}

NodeSessions::~NodeSessions() { close(std::chrono::steady_clock::now()); }

std::vector<ProducerOutput> NodeSessions::start(const std::vector<SelectedOutput>& outputs,
                                                std::chrono::nanoseconds cleanup_budget) {
  std::vector<ProducerOutput> producer_outputs;
  for (const SelectedOutput& output : outputs) {
    if (!output.reporter->has_start_node()) {
      producer_outputs.push_back({output.name, output.config, output.isolation});
      continue;
    }
    StartNodeResult result = output.reporter->start_node(output.config, cleanup_budget);
    if (!result.ok) {
      close(std::chrono::steady_clock::now() + cleanup_budget);
      throw StartupError({output.name, "", ""}, result.error);
    }
    sessions_.push_back({output.name, result.session});
    producer_outputs.push_back({output.name, std::move(result.producer_config), output.isolation});
  }
  return producer_outputs;
}

void NodeSessions::close(std::chrono::steady_clock::time_point deadline) noexcept {
  while (!sessions_.empty()) {
    Session session = sessions_.back();
    sessions_.pop_back();
    const auto remaining = std::max(deadline - std::chrono::steady_clock::now(),
                                    std::chrono::steady_clock::duration::zero());
    const auto timeout_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(remaining).count();
    // The outcome outlives this frame when the call is abandoned.
    auto outcome = std::make_shared<std::pair<int, AbiBuffer>>();
    outcome->first = TSM_OK;
    const bool returned = call_with_deadline(
        [session, outcome, timeout_ns]() {
          outcome->first =
              session.handle.vtable->close(session.handle.self, timeout_ns, outcome->second.get());
        },
        // A small grace beyond the budget, as for sinks.
        std::chrono::steady_clock::now() + remaining + std::chrono::milliseconds(50));
    try {
      if (!returned) {
        warn_("node session of reporter '" + session.reporter +
              "' did not close within its timeout; abandoned");
      } else if (outcome->first != TSM_OK) {
        warn_("node session of reporter '" + session.reporter + "' failed to close: " +
              (outcome->second.empty() ? std::string("no message") : outcome->second.str()));
      }
    } catch (...) {
      // Logging failed: keep closing the others.
    }
  }
}

}  // namespace tokenspeed::metrics
