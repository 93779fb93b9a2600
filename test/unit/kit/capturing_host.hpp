// capturing_host.hpp — a plugin::Host whose log calls land in a vector the
// kit tests read (C++17, like the kit). Test code only.
#pragma once

#include <string>
#include <vector>

#include <tokenspeed/metric_reporter.hpp>

namespace kit_test {

inline std::vector<std::string> lines;

inline void capture(void*, uint32_t, const char* message) { lines.emplace_back(message); }

inline tokenspeed::metrics::plugin::Host capturing_host() {
  tsm_host_api api{};
  api.struct_size = sizeof api;
  api.api_version = TSM_METRIC_REPORTER_API_VERSION;
  api.log = capture;
  return tokenspeed::metrics::plugin::Host(api);
}

}  // namespace kit_test
