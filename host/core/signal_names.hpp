// signal_names.hpp — the names of POSIX signals ("SIGSEGV") and what they
// usually mean, for crash lines and exit reports. Async-signal-safe: static
// strings, no allocation, no locale.
#pragma once

namespace tokenspeed::metrics {

// "SIGSEGV" for 11, ...; nullptr for a number without a standard name.
const char* signal_name(int signal) noexcept;

// "segmentation fault" for SIGSEGV, ...; "" when there is no short phrase.
const char* signal_meaning(int signal) noexcept;

}  // namespace tokenspeed::metrics
