// exponential_histogram_bench.cpp — the kit's exponential histogram against
// the classic bucket lookups on the same latency-like stream: an observe into
// each (the kit aggregation's std::lower_bound, the host's branch-free
// bucket_index of the record path, the exponential histogram at its settled
// scale and at a scale above 8), the ratio of exponential to classic measured
// in the same run, and the export size per series of the Prometheus native
// form beside 20 and 40 classic buckets. Figures: docs/performance.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "latency_stream.hpp"
#include "pipeline/collector.hpp"

namespace bench = tokenspeed::metrics::bench;
namespace kit = tokenspeed::metrics::kit;

namespace {

constexpr std::size_t kStream = 1 << 14;  // values cycled through; fits in L1/L2

using bench::kBounds20;
using bench::latency_stream;

// 40 bounds growing by 1.3 from 1 ms (to about 27 s).
std::vector<double> bounds40() {
  std::vector<double> b;
  for (double v = 0.001; b.size() < 40; v *= 1.3) b.push_back(v);
  return b;
}

const std::vector<double>& bounds_of(int64_t n) {
  static const std::vector<double> b40 = bounds40();
  return n == 20 ? kBounds20 : b40;
}

// A classic histogram's state as the kit aggregation keeps it.
struct Classic {
  explicit Classic(const std::vector<double>& b) : bounds(b), buckets(b.size() + 1, 0) {}
  const std::vector<double>& bounds;
  std::vector<uint64_t> buckets;
  uint64_t count = 0;
  double sum = 0;

  void observe_lower_bound(double v, uint64_t w) {
    const std::size_t i = static_cast<std::size_t>(
        std::lower_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
    buckets[i] += w;
    count += w;
    sum += v * static_cast<double>(w);
  }
  void observe_bucket_index(double v, uint64_t w) {
    buckets[tokenspeed::metrics::bucket_index(bounds.data(), bounds.size(), v)] += w;
    count += w;
    sum += v * static_cast<double>(w);
  }
};

void BM_ClassicLowerBound(benchmark::State& state) {
  const std::vector<double> values = latency_stream(kStream);
  Classic c(bounds_of(state.range(0)));
  std::size_t i = 0;
  for (auto _ : state) {
    c.observe_lower_bound(values[i++ & (kStream - 1)], 1);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(c.count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClassicLowerBound)->Arg(20)->Arg(40);

void BM_ClassicHostBucketIndex(benchmark::State& state) {
  const std::vector<double> values = latency_stream(kStream);
  Classic c(bounds_of(state.range(0)));
  std::size_t i = 0;
  for (auto _ : state) {
    c.observe_bucket_index(values[i++ & (kStream - 1)], 1);
    benchmark::ClobberMemory();
  }
  benchmark::DoNotOptimize(c.count);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClassicHostBucketIndex)->Arg(20)->Arg(40);

// Default options (160 buckets, max scale 20): the stream settles at scale 3.
void BM_ExponentialObserve(benchmark::State& state) {
  const std::vector<double> values = latency_stream(kStream);
  kit::ExponentialHistogram h;
  for (const double v : values) h.observe(v);  // the range exists before timing
  std::size_t i = 0;
  for (auto _ : state) {
    h.observe(values[i++ & (kStream - 1)]);
    benchmark::ClobberMemory();
  }
  state.counters["scale"] = h.scale();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ExponentialObserve);

// Values within 1 % of each other keep the scale above 8: the logarithm path.
void BM_ExponentialObserveAboveScale8(benchmark::State& state) {
  std::vector<double> values = latency_stream(kStream, 0.002);
  kit::ExponentialHistogram h;
  for (const double v : values) h.observe(v);
  std::size_t i = 0;
  for (auto _ : state) {
    h.observe(values[i++ & (kStream - 1)]);
    benchmark::ClobberMemory();
  }
  state.counters["scale"] = h.scale();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ExponentialObserveAboveScale8);

// Exponential over classic (the host's bucket_index, 20 and 40 bounds), timed
// in alternating blocks of the same values in the same run: the ratio the
// record-path goal (within 1.5x) is about.
void BM_ExponentialOverClassic(benchmark::State& state) {
  const std::vector<double> values = latency_stream(kStream);
  Classic c(bounds_of(state.range(0)));
  kit::ExponentialHistogram h;
  for (const double v : values) h.observe(v);
  using Clock = std::chrono::steady_clock;
  Clock::duration classic{};
  Clock::duration exponential{};
  for (auto _ : state) {
    const Clock::time_point t0 = Clock::now();
    for (const double v : values) {
      c.observe_bucket_index(v, 1);
      benchmark::ClobberMemory();
    }
    const Clock::time_point t1 = Clock::now();
    for (const double v : values) {
      h.observe(v);
      benchmark::ClobberMemory();
    }
    const Clock::time_point t2 = Clock::now();
    classic += t1 - t0;
    exponential += t2 - t1;
  }
  state.counters["ratio"] = std::chrono::duration<double>(exponential).count() /
                            std::chrono::duration<double>(classic).count();
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(2 * kStream));
}
BENCHMARK(BM_ExponentialOverClassic)->Arg(20)->Arg(40);

// Wire sizes, protobuf: a varint, a zigzag varint, a tag.
std::size_t varint_size(uint64_t v) {
  std::size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}
std::size_t zigzag_size(int64_t v) {
  return varint_size((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

// The bucket part of a remote-write prometheus.Histogram (proto3: spans as
// messages {sint32 offset = 1, uint32 length = 2}, deltas packed sint64) plus
// schema, zero threshold and zero count.
std::size_t native_bytes(const kit::PrometheusNativeHistogram& n) {
  std::size_t bytes = 1 + zigzag_size(n.schema) + 1 + 8 + 1 + varint_size(n.zero_count);
  for (const kit::NativeBuckets* b : {&n.positive, &n.negative}) {
    for (const kit::NativeBucketSpan& s : b->spans) {
      const std::size_t body = 1 + zigzag_size(s.offset) + 1 + varint_size(s.length);
      bytes += 1 + varint_size(body) + body;
    }
    if (!b->deltas.empty()) {
      std::size_t packed = 0;
      for (const int64_t d : b->deltas) packed += zigzag_size(d);
      bytes += 1 + varint_size(packed) + packed;
    }
  }
  return bytes;
}

// Classic buckets in the exposition protobuf (io.prometheus.client.Bucket
// {uint64 cumulative_count = 1, double upper_bound = 2} per bound).
std::size_t classic_protobuf_bytes(const std::vector<double>& bounds,
                                   const std::vector<uint64_t>& buckets) {
  std::size_t bytes = 0;
  uint64_t cumulative = 0;
  for (std::size_t i = 0; i < bounds.size(); ++i) {
    cumulative += buckets[i];
    const std::size_t body = 1 + varint_size(cumulative) + 1 + 8;
    bytes += 1 + varint_size(body) + body;
  }
  return bytes;
}

// Classic buckets in the text format, one line per bound and +Inf, with the
// family and label of an inter-token latency series.
std::size_t classic_text_bytes(const std::vector<double>& bounds,
                               const std::vector<uint64_t>& buckets) {
  std::size_t bytes = 0;
  uint64_t cumulative = 0;
  char line[256];
  for (std::size_t i = 0; i <= bounds.size(); ++i) {
    cumulative += buckets[i];
    const std::string le =
        i < bounds.size() ? (std::snprintf(line, sizeof line, "%g", bounds[i]), std::string(line))
                          : "+Inf";
    bytes += static_cast<std::size_t>(std::snprintf(
        line, sizeof line,
        "tokenspeed:inter_token_latency_seconds_bucket{model_name=\"m\",le=\"%s\"} %llu\n",
        le.c_str(), static_cast<unsigned long long>(cumulative)));
  }
  return bytes;
}

// One series after range(0) observations of the stream: buckets and bytes of
// each form (the timing is that of building the exports, not the point).
void BM_ExportSizePerSeries(benchmark::State& state) {
  const std::vector<double> values = latency_stream(static_cast<std::size_t>(state.range(0)));
  kit::ExponentialHistogram h;
  Classic c20(bounds_of(20));
  Classic c40(bounds_of(40));
  for (const double v : values) {
    h.observe(v);
    c20.observe_lower_bound(v, 1);
    c40.observe_lower_bound(v, 1);
  }
  kit::PrometheusNativeHistogram native;
  for (auto _ : state) {
    h.to_prometheus(native);
    benchmark::DoNotOptimize(native.positive.deltas.data());
  }
  state.counters["native_schema"] = native.schema;
  state.counters["native_buckets"] = static_cast<double>(native.positive.deltas.size());
  state.counters["native_spans"] = static_cast<double>(native.positive.spans.size());
  state.counters["native_bytes"] = static_cast<double>(native_bytes(native));
  state.counters["classic20_pb_bytes"] =
      static_cast<double>(classic_protobuf_bytes(c20.bounds, c20.buckets));
  state.counters["classic40_pb_bytes"] =
      static_cast<double>(classic_protobuf_bytes(c40.bounds, c40.buckets));
  state.counters["classic20_text_bytes"] =
      static_cast<double>(classic_text_bytes(c20.bounds, c20.buckets));
  state.counters["classic40_text_bytes"] =
      static_cast<double>(classic_text_bytes(c40.bounds, c40.buckets));
}
BENCHMARK(BM_ExportSizePerSeries)->Arg(100)->Arg(10000)->Arg(1000000)->Iterations(10);

}  // namespace

BENCHMARK_MAIN();
