// producer_exit.hpp — what the end of a producer process means to the
// operator: "was killed by SIGSEGV (segmentation fault)", whether it counts as
// a crash, and whether the launcher had asked for it. Pure functions over the
// supervisor's table; never reaps or signals anything.
#pragma once

#include <string>

#include "process/producer_supervisor.hpp"

namespace tokenspeed::metrics {

// Died by a signal the launcher did not send: not its SIGTERM at stop, not
// its SIGKILL after the budget. A producer that exits (even nonzero) did not crash.
bool producer_crashed(const ProducerProcess& process) noexcept;

// Ended before the launcher asked it to stop (crashed, or exited on its own).
bool producer_ended_unexpectedly(const ProducerProcess& process) noexcept;

// "SIGSEGV", or "signal 42" for a number without a name; "" for 0.
std::string signal_label(int signal);

// How it ended, as the end of "producer 'scheduler-0' (pid 4711) ...":
// "was killed by SIGSEGV (segmentation fault)", "exited with status 3",
// "exited", "was killed after the shutdown budget", "is running".
std::string describe_producer_exit(const ProducerProcess& process);

// The status column of a producer that left no summary of its outputs:
// "crashed: killed by SIGSEGV (segmentation fault)", "failed: did not exit
// within the shutdown budget and was killed", "failed: exited with status 1".
std::string producer_row_status(const ProducerProcess& process);

}  // namespace tokenspeed::metrics
