// latency_stream.hpp — the latency-like values the histogram benchmarks
// (exponential_histogram_bench, remote_write_bench) observe, and the
// catalog's 20 classic bounds they are compared with, so that both report
// on the same stream. Benchmark code only.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tokenspeed::metrics::bench {

// Inter-token-like latencies: log-normal around 30 ms, a factor e per sigma;
// another seed, another stream of the same distribution.
inline std::vector<double> latency_stream(std::size_t n, double sigma = 1.0, uint64_t seed = 42) {
  std::mt19937_64 random(seed);
  std::lognormal_distribution<double> latency(std::log(0.03), sigma);
  std::vector<double> values(n);
  for (double& v : values) v = latency(random);
  return values;
}

// The catalog's request_time_per_output_token_seconds bounds (20).
inline const std::vector<double> kBounds20 = {0.002, 0.005, 0.01, 0.02, 0.03, 0.04, 0.05,
                                              0.06,  0.07,  0.08, 0.09, 0.1,  0.15, 0.2,
                                              0.3,   0.4,   0.6,  0.8,  1,    2};

}  // namespace tokenspeed::metrics::bench
