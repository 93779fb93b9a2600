// remote_write_bench.cpp — the remote_write output's costs: samples per
// second encoded (protobuf + snappy) from 10,000 series, samples per second
// pushed into a real local Prometheus (its remote-write URL in
// TSM_BENCH_REMOTE_WRITE_URL; skipped without it), the heap the
// output holds per 10,000 series, and the bytes a histogram series costs on
// the wire as a native histogram and as 20 classic buckets.
#include <benchmark/benchmark.h>
#include <malloc.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <snappy.h>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/http_client.hpp>

#include "export_cpu_sizes.hpp"
#include "bench_events.hpp"
#include "latency_stream.hpp"
#include "remote_write_encoder.hpp"

namespace bench = tokenspeed::metrics::bench;
namespace kit = tokenspeed::metrics::kit;
namespace rw = tokenspeed::metrics::remote_write;

namespace {

using bench::EventSet;

rw::EncoderOptions encoder_options() {
  rw::EncoderOptions options;
  options.process_label = {"process", "bench-1"};
  options.max_samples_per_request = 2000;
  return options;
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Collect, encode and snappy-compress every request of one push, as the
// sink does (each request compressed as soon as it is complete).
std::size_t encode_push(kit::Aggregator& aggregator, const rw::Encoder& encoder, int64_t at_ms,
                        std::vector<std::string>& bodies) {
  std::size_t samples = 0;
  bodies.clear();
  encoder.encode(aggregator.collect(at_ms * 1000000), at_ms, false,
                 [&](rw::EncodedRequest&& request) {
                   bodies.emplace_back();
                   snappy::Compress(request.body.data(), request.body.size(), &bodies.back());
                   bodies.back().shrink_to_fit();
                   samples += request.samples;
                 });
  return samples;
}

void BM_EncodeSnappy10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  for (const tsm_metric_event& e : set.events) aggregator.add(e);
  const rw::Encoder encoder(encoder_options());
  std::vector<std::string> bodies;
  std::size_t samples = 0;
  int64_t at = now_ms();
  for (auto _ : state) samples = encode_push(aggregator, encoder, ++at, bodies);
  std::size_t bytes = 0;
  for (const auto& body : bodies) bytes += body.size();
  state.counters["samples_per_push"] = static_cast<double>(samples);
  state.counters["snappy_bytes"] = static_cast<double>(bytes);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(samples));
}
BENCHMARK(BM_EncodeSnappy10kSeries)->Unit(benchmark::kMillisecond);

// The CPU of one push without the network, at range(0) series: collect,
// encode and snappy-compress every request (process CPU time).
void BM_ExportCpu(benchmark::State& state) {
  const auto series = static_cast<int>(state.range(0));
  const EventSet set(series);
  kit::AggregationOptions aggregation;
  aggregation.max_series = static_cast<std::size_t>(series);
  kit::Aggregator aggregator(aggregation);
  for (const tsm_metric_event& e : set.events) aggregator.add(e);
  const rw::Encoder encoder(encoder_options());
  std::vector<std::string> bodies;
  std::size_t samples = 0;
  int64_t at = now_ms();
  for (auto _ : state) samples = encode_push(aggregator, encoder, ++at, bodies);
  std::size_t bytes = 0;
  for (const auto& body : bodies) bytes += body.size();
  state.counters["series"] = series;
  state.counters["samples_per_push"] = static_cast<double>(samples);
  state.counters["snappy_bytes"] = static_cast<double>(bytes);
  state.counters["requests"] = static_cast<double>(bodies.size());
  state.SetItemsProcessed(state.iterations() * series);
}
BENCHMARK(BM_ExportCpu)->Apply(export_cpu_sizes);

// Collect, encode, compress and POST every request into a local Prometheus.
void BM_PushToPrometheus10kSeries(benchmark::State& state) {
  const char* url = std::getenv("TSM_BENCH_REMOTE_WRITE_URL");
  if (url == nullptr || *url == '\0') {
    state.SkipWithError("TSM_BENCH_REMOTE_WRITE_URL is not set (a Prometheus remote-write URL)");
    return;
  }
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  for (const tsm_metric_event& e : set.events) aggregator.add(e);
  const rw::Encoder encoder(encoder_options());
  kit::HttpClient client;
  std::vector<std::string> bodies;
  std::size_t samples = 0;
  int64_t at = now_ms();
  for (auto _ : state) {
    at = std::max(at + 1, now_ms());
    samples = encode_push(aggregator, encoder, at, bodies);
    for (const std::string& body : bodies) {
      kit::HttpRequest request;
      request.url = url;
      request.body = body;
      request.headers = {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                         "X-Prometheus-Remote-Write-Version: 0.1.0", "Expect:"};
      const kit::HttpResponse response =
          client.post(request, std::chrono::steady_clock::now() + std::chrono::seconds(10));
      if (response.status < 200 || response.status >= 300) {
        state.SkipWithError(
            ("HTTP " + std::to_string(response.status) + " " + response.error + response.body)
                .c_str());
        return;
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(samples));
}
BENCHMARK(BM_PushToPrometheus10kSeries)->Unit(benchmark::kMillisecond)->UseRealTime();

// The heap a sink holds for 10,000 series once each had an event (and after
// one push encoded them, so that the encoder's buffers are counted too).
void BM_HeapPer10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  std::size_t held = 0;
  for (auto _ : state) {
    const std::size_t before = mallinfo2().uordblks;
    auto aggregator = std::make_unique<kit::Aggregator>(kit::AggregationOptions{});
    for (const tsm_metric_event& e : set.events) aggregator->add(e);
    held = mallinfo2().uordblks - before;
    benchmark::DoNotOptimize(aggregator.get());
  }
  state.counters["heap_bytes"] = static_cast<double>(held);
  state.counters["bytes_per_series"] = static_cast<double>(held) / 10'000;
}
BENCHMARK(BM_HeapPer10kSeries)->Unit(benchmark::kMillisecond)->Iterations(3);

// The heap one push of 10,000 series holds at its end: the snappy bodies
// waiting to be sent (the snapshot and the one uncompressed body at a time
// are freed by then).
void BM_PushHeap10kSeries(benchmark::State& state) {
  const EventSet set(10'000);
  kit::Aggregator aggregator({});
  for (const tsm_metric_event& e : set.events) aggregator.add(e);
  const rw::Encoder encoder(encoder_options());
  std::size_t held = 0;
  for (auto _ : state) {
    const std::size_t before = mallinfo2().uordblks;
    std::vector<std::string> bodies;
    encode_push(aggregator, encoder, 1, bodies);
    held = mallinfo2().uordblks - before;
  }
  state.counters["heap_bytes"] = static_cast<double>(held);
}
BENCHMARK(BM_PushHeap10kSeries)->Unit(benchmark::kMillisecond)->Iterations(3);

// One push of 1,000 histogram series (two labels and the process label, as
// the sink sends them) after range(1) observations each of its own latency
// stream: the request bytes per series, protobuf and snappy, with range(0) 1
// a native histogram sample (default options: 160 buckets, maximum scale 20),
// with 0 the catalog's 20 classic bounds (_bucket per bound and +Inf, _sum,
// _count). Timing: the encode.
void BM_HistogramBytesPerSeries(benchmark::State& state) {
  constexpr int kSeries = 1000;
  const bool native = state.range(0) == 1;
  tsm_metric_info info =
      bench::make_info(TSM_KIND_HISTOGRAM, "tokenspeed:time_per_output_token_seconds");
  info.bucket_count = static_cast<uint32_t>(bench::kBounds20.size());
  info.bucket_bounds = bench::kBounds20.data();
  if (native) {
    info.histogram_layout = TSM_HISTOGRAM_EXPONENTIAL;
    info.max_buckets = 160;
    info.max_scale = 20;
  }
  kit::AggregationOptions options;
  options.exponential_histograms = true;
  kit::Aggregator aggregator(options);
  std::vector<std::string> names;
  for (int i = 0; i < kSeries; ++i) names.push_back("model-" + std::to_string(i));
  for (int i = 0; i < kSeries; ++i) {
    // A stream per series: identical series would flatter snappy.
    const std::vector<double> values = bench::latency_stream(
        static_cast<std::size_t>(state.range(1)), 1.0, static_cast<uint64_t>(i + 1));
    const char* label_values[] = {names[static_cast<std::size_t>(i)].c_str(), "0"};
    tsm_metric_event e{};
    e.struct_size = sizeof e;
    e.info = &info;
    e.metric = info.name;
    e.operation = TSM_OP_OBSERVE;
    e.weight = 1;
    e.label_count = 2;
    e.label_names = bench::kLabelNames;
    e.label_values = label_values;
    for (const double v : values) {
      e.value = v;
      aggregator.add(e);
    }
  }
  const rw::Encoder encoder(encoder_options());
  const kit::Snapshot snapshot = aggregator.collect(1);
  std::size_t bytes = 0;
  std::size_t compressed = 0;
  std::size_t samples = 0;
  std::string body;
  for (auto _ : state) {
    bytes = compressed = samples = 0;
    encoder.encode(snapshot, 1, false, [&](rw::EncodedRequest&& request) {
      bytes += request.body.size();
      samples += request.samples;
      snappy::Compress(request.body.data(), request.body.size(), &body);
      compressed += body.size();
    });
  }
  state.counters["samples_per_series"] = static_cast<double>(samples) / kSeries;
  state.counters["bytes_per_series"] = static_cast<double>(bytes) / kSeries;
  state.counters["snappy_bytes_per_series"] = static_cast<double>(compressed) / kSeries;
}
BENCHMARK(BM_HistogramBytesPerSeries)
    ->ArgNames({"native", "observations"})
    ->ArgsProduct({{0, 1}, {100, 10000}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
