// otlp_naming.hpp — how the engine's metric names and units become OTLP
// ones: a counter's Prometheus "_total" suffix is dropped (OTLP marks a
// monotonic Sum instead, and Prometheus-side translators add "_total" back),
// units become UCUM ("seconds" -> "s", "tokens" -> "{token}"). Pure functions.
#pragma once

#include <string>
#include <string_view>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::otlp {

// The OTLP metric name of an engine metric of the given kind.
inline std::string otlp_metric_name(std::string_view name, uint32_t kind) {
  constexpr std::string_view kTotal = "_total";
  if (kind == TSM_KIND_COUNTER && name.size() > kTotal.size() &&
      name.substr(name.size() - kTotal.size()) == kTotal) {
    name.remove_suffix(kTotal.size());
  }
  return std::string(name);
}

// The UCUM unit of an engine unit: SI units by their symbol, a ratio as "1",
// a count of things as the annotation "{thing}" (singular); "" stays "".
inline std::string otlp_unit(std::string_view unit) {
  struct Known {
    std::string_view engine;
    std::string_view ucum;
  };
  static constexpr Known kKnown[] = {
      {"seconds", "s"},      {"second", "s"}, {"milliseconds", "ms"}, {"microseconds", "us"},
      {"nanoseconds", "ns"}, {"bytes", "By"}, {"ratio", "1"},         {"percent", "%"},
  };
  if (unit.empty()) return {};
  for (const Known& known : kKnown) {
    if (known.engine == unit) return std::string(known.ucum);
  }
  if (unit.front() == '{') return std::string(unit);  // already an annotation
  if (unit.size() > 1 && unit.back() == 's') unit.remove_suffix(1);
  return "{" + std::string(unit) + "}";
}

}  // namespace tokenspeed::metrics::otlp
