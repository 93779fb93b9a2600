// overflow_label.hpp — the label a view's cardinality limit gives a family
// (TSM_OVERFLOW_LABEL): "true" on its overflow series, "" on every other
// one. Prometheus reads a label with an empty value as no label, so an
// output writes the empty one nowhere: the ordinary series of a capped
// family keep the label set they had before the cap.
#pragma once

#include <string_view>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::kit {

inline constexpr std::string_view kOverflowLabel = TSM_OVERFLOW_LABEL;

// Whether a label is the overflow label of an ordinary series: left out.
inline bool is_unset_overflow_label(std::string_view name, std::string_view value) noexcept {
  return value.empty() && name == kOverflowLabel;
}

}  // namespace tokenspeed::metrics::kit
