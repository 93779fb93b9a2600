// metric_events.hpp — an event of a family as the host hands it to an output
// (tsm_metric_event of the C ABI), for the tests of the outputs and the kit.
// C++17, as the kit's tests are. Test code only.
#pragma once

#include <cstdint>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::test {

// An event of info with the family's label names and label_values (one per
// label); the event points into info and label_values, which must outlive it.
inline tsm_metric_event metric_event(const tsm_metric_info& info, uint32_t operation, double value,
                                     const char* const* label_values, uint64_t weight = 1,
                                     int64_t timestamp_ns = 1000) {
  tsm_metric_event event{};
  event.struct_size = sizeof event;
  event.info = &info;
  event.metric = info.name;
  event.operation = operation;
  event.value = value;
  event.weight = weight;
  event.timestamp_ns = timestamp_ns;
  event.label_count = info.label_count;
  event.label_names = info.label_names;
  event.label_values = label_values;
  return event;
}

}  // namespace tokenspeed::metrics::test
