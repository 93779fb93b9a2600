// shutdown_report.hpp — what a Launcher's or a Producer's close() reports: per
// process and output, what became of the events recorded.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace tokenspeed::metrics {

// What one process reported of one output at shutdown.
struct OutputReport {
  std::string process;  // "launcher", the producer's name
  pid_t pid = 0;
  std::string output;
  std::uint64_t accepted = 0;             // offered by the engine's threads
  std::uint64_t delivered = 0;            // emit returned success
  std::uint64_t dropped_queue_full = 0;   // the thread's queue was full
  std::uint64_t dropped_disabled = 0;     // the sink was disabled or never created
  std::uint64_t dropped_after_close = 0;  // recorded after close began
  std::uint64_t discarded_at_close = 0;   // still queued when the budget ran out
  std::uint64_t lost_in_helper = 0;       // "isolation": "process": inside a crashed helper
  // Disabled, not created, close failed or abandoned; or its plugin lost
  // events and sent none (plugin_lost > 0, plugin_sent 0).
  bool failed = false;
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

}  // namespace tokenspeed::metrics
