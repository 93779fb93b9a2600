// producer_exit.cpp — the wording and the classification of producer exits.
#include "process/producer_exit.hpp"

#include <csignal>

#include "core/signal_names.hpp"

namespace tokenspeed::metrics {

bool producer_crashed(const ProducerProcess& process) noexcept {
  if (process.running || process.term_signal == 0 || process.killed) return false;
  return !(process.stop_requested && process.term_signal == SIGTERM);
}

bool producer_ended_unexpectedly(const ProducerProcess& process) noexcept {
  if (process.running) return false;
  return producer_crashed(process) || !process.stop_requested;
}

std::string signal_label(int signal) {
  if (signal == 0) return {};
  const char* name = signal_name(signal);
  return name != nullptr ? std::string(name) : "signal " + std::to_string(signal);
}

std::string describe_producer_exit(const ProducerProcess& process) {
  if (process.running) return "is running";
  if (process.killed) return "did not exit within the shutdown budget and was killed";
  if (process.term_signal != 0) {
    std::string text = "was killed by " + signal_label(process.term_signal);
    const std::string meaning = signal_meaning(process.term_signal);
    if (!meaning.empty()) text += " (" + meaning + ")";
    return text;
  }
  if (process.exit_status == 0) return "exited";
  return "exited with status " + std::to_string(process.exit_status);
}

std::string producer_row_status(const ProducerProcess& process) {
  if (producer_crashed(process)) {
    std::string text = "crashed: killed by " + signal_label(process.term_signal);
    const std::string meaning = signal_meaning(process.term_signal);
    if (!meaning.empty()) text += " (" + meaning + ")";
    return text;
  }
  return "failed: " + describe_producer_exit(process) + " (no summary)";
}

}  // namespace tokenspeed::metrics
