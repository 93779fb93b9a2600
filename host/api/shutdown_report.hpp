// shutdown_report.hpp — the public ShutdownReport from the process
// summaries and sink figures the host keeps. Shutdown only.
// Tested in test/unit/api/launcher_test.cpp (the report of a closed node).
#pragma once

#include <vector>

#include "process/process_summary.hpp"
#include "tokenspeed/metrics/shutdown_report.hpp"

namespace tokenspeed::metrics {

ShutdownReport shutdown_report_from(const std::vector<ProcessSummary>& summaries);

}  // namespace tokenspeed::metrics
