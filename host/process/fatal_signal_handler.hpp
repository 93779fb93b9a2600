// fatal_signal_handler.hpp — names a crash before the process dies: on
// SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS or SIGTRAP it writes one
// preformatted line to stderr (the process, the signal, and the output and
// plugin file whose code the crashing thread was running), then lets the
// signal kill the process as it would have. Never recovers from a crash.
#pragma once

#include <cstddef>
#include <string_view>

namespace tokenspeed::metrics {

// Installs the handler (once per process; later calls only rename the
// process, e.g. "scheduler-0" once a producer knows its role). The line reads
//   tokenspeed-metrics: fatal: scheduler-0 (pid 4711): SIGSEGV (segmentation
//   fault) in output 'x' (plugin file '/p/x.so') during emit; a plugin's
//   crash is the process's crash
// or "... outside plugin code" when no plugin call was running on that thread.
// Startup thread only; the handler itself is async-signal-safe (write(2) of a
// stack buffer, then the default action).
void install_fatal_signal_handler(std::string_view process_name) noexcept;

// Formats the line the handler writes for signal on this thread into out
// (at most size bytes, no NUL) and returns its length. Async-signal-safe;
// exposed for tests.
std::size_t format_fatal_signal_line(int signal, char* out, std::size_t size) noexcept;

}  // namespace tokenspeed::metrics
