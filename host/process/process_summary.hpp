// process_summary.hpp — what each process reports of its outputs when it
// exits (accepted, delivered, dropped, failed), written as a small JSON file
// into the run directory so the launcher can print one table for the node.
// Shutdown only.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/sink_worker.hpp"

namespace tokenspeed::metrics {

struct ProcessSummary {
  std::string process;  // "launcher", "scheduler-0", "frontend"
  pid_t pid = 0;
  std::vector<SinkStats> outputs;
};

// Writes "summary-<pid>.json" into dir (0600). Returns false on failure.
bool write_process_summary(const std::filesystem::path& dir,
                           const ProcessSummary& summary) noexcept;

// Every summary file in dir, in process-name order.
std::vector<ProcessSummary> read_process_summaries(const std::filesystem::path& dir);

// The table: one row per process and output.
std::string format_summary_table(const std::vector<ProcessSummary>& summaries);

}  // namespace tokenspeed::metrics
