// channel_test_events.hpp — a histogram's description and its events, as the
// channel tests write them through an isolated output's channel. Test code only.
#pragma once

#include <string>

#include <tokenspeed/metric_reporter.h>

#include "metric_events.hpp"

namespace tokenspeed::metrics::test {

inline const char* const kChannelLabelNames[] = {"model_name", "dp_rank"};
inline const double kChannelBounds[] = {0.1, 1.0, 10.0};

inline tsm_metric_info channel_histogram_info() {
  tsm_metric_info info{};
  info.struct_size = sizeof info;
  info.kind = TSM_KIND_HISTOGRAM;
  info.name = "tokenspeed:latency_seconds";
  info.help = "Latency.";
  info.unit = "seconds";
  info.label_count = 2;
  info.label_names = kChannelLabelNames;
  info.bucket_count = 3;
  info.bucket_bounds = kChannelBounds;
  return info;
}

// An observation of info with the given label values (two of them).
inline tsm_metric_event channel_event(const tsm_metric_info& info, const char* const* values,
                                      double value) {
  return metric_event(info, TSM_OP_OBSERVE, value, values, 2, 1700000000000000000);
}

}  // namespace tokenspeed::metrics::test
