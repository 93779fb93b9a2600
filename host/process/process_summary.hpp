// process_summary.hpp — what each process reports of its outputs when it
// exits (accepted, delivered, dropped, failed), written as a small JSON file
// into the run directory so the launcher can print one table for the node.
// Shutdown only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/sink_figures.hpp"
#include "process/producer_supervisor.hpp"
#include "prometheus/prometheus_output.hpp"

namespace tokenspeed::metrics {

struct ProcessSummary {
  std::string process;  // "launcher", "scheduler-0", "frontend"
  pid_t pid = 0;
  std::vector<SinkFigures> outputs;
  // Series the process kept in memory for want of room in its metric file,
  // and the events recorded into them: not in their families on /metrics.
  UnstoredFigures unstored;
};

// Writes "summary-<pid>.json" into dir (0600). Returns false on failure.
bool write_process_summary(const std::filesystem::path& dir,
                           const ProcessSummary& summary) noexcept;

// Every summary file in dir, in process-name order.
std::vector<ProcessSummary> read_process_summaries(const std::filesystem::path& dir);

// True when the output did not work to the end in that process: its sink
// failed to be created, was disabled by an emit failure, failed to close, or
// was abandoned at close (still inside a plugin call at the deadline); or
// its plugin delivered nothing while it lost events (sent 0, lost > 0: a
// back end that refused every request, one never reached).
bool output_failed(const SinkFigures& figures) noexcept;

// True when the output worked to the end but its plugin lost events (its
// lost figure: given up after the host delivered them) while sending
// others: "degraded" in the table, an exit status of its own.
bool output_degraded(const SinkFigures& figures) noexcept;

// "ok", "degraded" or "failed: <why>" for the status column, then what the
// plugin refused and lost, and the sink helper's restarts.
std::string output_status(const SinkFigures& figures);

// The node's table at exit: one row per process and output, with a status
// column; a row per producer that left no summary (crashed, killed at the
// budget, exited on its own), and the lines that explain the rows. With no
// external output selected it says so instead (and still lists such
// producers). producers is the supervisor's final table (may be empty).
std::string format_summary_table(const std::vector<ProcessSummary>& summaries,
                                 const std::vector<ProducerProcess>& producers = {});

}  // namespace tokenspeed::metrics
