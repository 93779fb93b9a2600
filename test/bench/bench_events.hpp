// bench_events.hpp — the events the network output benchmarks (otlp,
// remote_write) feed their sinks: N series of two labels, a third each a
// counter inc, a gauge set and a weighted histogram observation, built once
// as the host builds them from interned strings. Benchmark code only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <tokenspeed/metric_reporter.h>

namespace tokenspeed::metrics::bench {

inline const char* const kLabelNames[] = {"model_name", "engine"};
inline const double kBounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25, 0.5,
                                 0.75,  1.0,   2.5,  5.0,  7.5,  10.0, 20.0, 40.0, 80.0};

inline tsm_metric_info make_info(uint32_t kind, const char* name) {
  tsm_metric_info i{};
  i.struct_size = sizeof i;
  i.kind = kind;
  i.name = name;
  i.help = "help";
  i.unit = kind == TSM_KIND_HISTOGRAM ? "seconds" : "tokens";
  i.label_count = 2;
  i.label_names = kLabelNames;
  if (kind == TSM_KIND_HISTOGRAM) {
    i.bucket_count = sizeof kBounds / sizeof kBounds[0];
    i.bucket_bounds = kBounds;
  }
  return i;
}

inline const tsm_metric_info kCounter =
    make_info(TSM_KIND_COUNTER, "tokenspeed:generation_tokens_total");
inline const tsm_metric_info kGauge = make_info(TSM_KIND_GAUGE, "tokenspeed:num_requests_running");
inline const tsm_metric_info kHistogram =
    make_info(TSM_KIND_HISTOGRAM, "tokenspeed:inter_token_latency_seconds");

// Events over `series` label sets, a third of each kind, built once (the
// host builds them from interned strings too).
struct EventSet {
  explicit EventSet(int series) {
    for (int i = 0; i < series; ++i) {
      names.push_back("model-" + std::to_string(i / 8));
      engines.push_back(std::to_string(i % 8));
    }
    values.resize(static_cast<std::size_t>(series) * 2);
    for (std::size_t i = 0; i < static_cast<std::size_t>(series); ++i) {
      values[2 * i] = names[i].c_str();
      values[2 * i + 1] = engines[i].c_str();
      tsm_metric_event e{};
      e.struct_size = sizeof e;
      e.timestamp_ns = 1'700'000'000'000'000'000 + static_cast<int64_t>(i);
      e.weight = 1;
      e.label_count = 2;
      e.label_names = kLabelNames;
      e.label_values = &values[2 * i];
      switch (i % 3) {
        case 0:
          e.info = &kCounter;
          e.operation = TSM_OP_INC;
          e.value = 3;
          break;
        case 1:
          e.info = &kGauge;
          e.operation = TSM_OP_SET;
          e.value = static_cast<double>(i);
          break;
        default:
          e.info = &kHistogram;
          e.operation = TSM_OP_OBSERVE;
          e.value = 0.03;
          e.weight = 3;
      }
      e.metric = e.info->name;
      events.push_back(e);
    }
  }
  std::vector<std::string> names, engines;
  std::vector<const char*> values;
  std::vector<tsm_metric_event> events;
};

}  // namespace tokenspeed::metrics::bench
