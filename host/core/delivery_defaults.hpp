// delivery_defaults.hpp — the defaults of the two delivery flags, in one
// place for the router, the launcher and the command line:
// --metrics-reporter-queue-size and --metrics-shutdown-timeout.
// Tested in test/unit/api/engine_options_test.cpp (the defaults and ranges as
// flags apply them).
#pragma once

#include <chrono>
#include <cstddef>

namespace tokenspeed::metrics {

// Events per ring (one ring per collector thread per output): 16384 slots of
// 16 bytes (room for marker slots), so 256 KiB per collector thread per output.
inline constexpr std::size_t kDefaultQueueSize = 8192;

// The shutdown budget of the whole node.
inline constexpr std::chrono::milliseconds kDefaultShutdownTimeout{5'000};

}  // namespace tokenspeed::metrics
