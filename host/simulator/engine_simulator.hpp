// engine_simulator.hpp — the simulated engine: records the TokenSpeed catalog the
// way an inference engine does, as a scheduler rank (per iteration) or as the
// frontend (per finished request and per streamed chunk). A load generator
// and a demonstration; it measures nothing real.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "tokenspeed/metrics/recorder.hpp"
#include "tokenspeed/metrics/recording.hpp"
#include "tokenspeed/metrics/tokenspeed_catalog.hpp"

namespace tokenspeed::metrics {

struct SimulationOptions {
  std::string model_name = "llama";
  std::string app_key = "default";
  double request_rate = 50.0;  // finished requests per second (frontend)
  std::uint64_t seed = 1;
  // Scheduler iterations take this long on average (a real step: 5-50 ms).
  std::chrono::microseconds iteration_time{10'000};
  // The catalog's histograms with exponential buckets (their classic
  // bounds kept for outputs that aggregate those).
  bool native_histograms = false;
};

// The catalog entry called name as the simulation records it: with
// exponential buckets when options.native_histograms. Lives for the process.
const MetricDefinition& simulated_metric(std::string_view name, const SimulationOptions& options);

// Threading: run() on one thread; stop may be set from any thread.
class SchedulerSimulator {
 public:
  SchedulerSimulator(Recorder& recorder, SimulationOptions options, int dp_rank);
  // Records one scheduler iteration per iteration_time until stop is set.
  void run(const std::atomic<bool>& stop);
  // One iteration without waiting (tests, benchmarks). Returns events recorded.
  std::uint64_t iterate();

 private:
  SimulationOptions options_;
  std::uint64_t rng_;
  Gauge running_, waiting_, kv_usage_;
  Histogram iteration_tokens_;
  Counter accepted_tokens_, draft_tokens_, drafts_, nan_aborted_;
  double kv_level_ = 0.1;
};

class FrontendSimulator {
 public:
  FrontendSimulator(Recorder& recorder, SimulationOptions options);
  // Finishes requests at request_rate (Poisson) until stop is set.
  void run(const std::atomic<bool>& stop);
  // One finished request with its streamed chunks. Returns events recorded.
  std::uint64_t finish_request();

 private:
  SimulationOptions options_;
  std::uint64_t rng_;
  Counter prompt_tokens_, generation_tokens_, requests_, success_, prefix_hits_;
  Histogram ttft_, tpot_, itl_, e2e_, tokenize_latency_, detokenize_latency_;
};

}  // namespace tokenspeed::metrics
