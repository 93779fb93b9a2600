// host_version.cpp — the build's version string (TSM_VERSION from Meson).
#include "core/host_version.hpp"

#ifndef TSM_VERSION
#define TSM_VERSION "0.0.0"
#endif

namespace tokenspeed::metrics {

const char* host_version() noexcept { return TSM_VERSION; }

}  // namespace tokenspeed::metrics
