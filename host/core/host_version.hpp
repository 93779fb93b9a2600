// host_version.hpp — the version of the host as the build stamped it, for
// `--version`, the plugin host table and messages. Never parsed or compared.
#pragma once

namespace tokenspeed::metrics {

// "0.1.0": the Meson project version of this build.
const char* host_version() noexcept;

}  // namespace tokenspeed::metrics
