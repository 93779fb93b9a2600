// remote_write_naming.hpp — how the engine's series become Prometheus sample
// names and label text: the exposition's names (counters keep "_total"),
// histograms' _bucket/_sum/_count, le written as /metrics writes it, and the
// label-name rule. Pure functions.
#pragma once

#include <string>
#include <string_view>

#include <tokenspeed/kit/prometheus_text.hpp>

namespace tokenspeed::metrics::remote_write {

// A bucket bound as the exposition writes it (Go's FormatFloat 'g', -1).
inline std::string format_le(double bound) { return kit::format_prometheus_value(bound); }

// A label name Prometheus accepts that is not reserved ("__" prefixes).
inline bool valid_label_name(std::string_view name) {
  return kit::valid_prometheus_label_name(name);
}

}  // namespace tokenspeed::metrics::remote_write
