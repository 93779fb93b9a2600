// isolation_bench.cpp — what "isolation": "process" costs per event: a sink
// delivery thread's emit into a no-op plugin in process against the isolated proxy
// (a copy into the shared ring), and the end-to-end delivery of a batch
// through the helper against the same batch in process. Figures:
// docs/reliability.md.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/abi_buffer.hpp"
#include "plugin/plugin_loader.hpp"
#include "plugin/reporter_registry.hpp"
#include "isolation/isolated_output.hpp"

namespace {

using namespace tokenspeed::metrics;
using namespace tokenspeed::metrics::isolation;

const char* const kLabelNames[2] = {"model", "rank"};
const char* const kLabelValues[2] = {"llama", "0"};
const tsm_metric_info kInfo{sizeof(tsm_metric_info),
                            TSM_KIND_COUNTER,
                            "requests_total",
                            "Finished requests.",
                            "",
                            2,
                            kLabelNames,
                            0,
                            nullptr};

tsm_metric_event counter_event() {
  tsm_metric_event e{};
  e.struct_size = sizeof e;
  e.operation = TSM_OP_INC;
  e.timestamp_ns = 1'700'000'000'000'000'000;
  e.metric = kInfo.name;
  e.value = 1;
  e.weight = 1;
  e.label_count = 2;
  e.label_names = kLabelNames;
  e.label_values = kLabelValues;
  e.info = &kInfo;
  return e;
}

std::string noop_plugin() {
  return std::string(TSM_BUILD_ROOT) + "/test/plugins/noop_sink/noop_sink.so";
}

const Reporter& noop_reporter() {
  static ReporterRegistry registry;
  static PluginLoader loader(registry, [](const std::string&) {});
  static const Reporter* reporter = [] {
    PluginSearchOptions search;
    search.plugin_dirs = {std::string(TSM_BUILD_ROOT) + "/test/plugins/noop_sink"};
    search.allow_insecure = true;
    loader.load(search);
    return registry.find("noop_sink");
  }();
  if (reporter == nullptr) std::abort();
  return *reporter;
}

tsm_sink in_process_sink() {
  CreateSinkResult created = noop_reporter().create_sink(boost::json::object{});
  if (!created.ok) std::abort();
  return created.sink;
}

std::unique_ptr<IsolatedOutput> isolated_output(tsm_sink& sink) {
  IsolatedOutputOptions options;
  options.output = "noop_sink";
  options.plugin_path = noop_plugin();
  options.reporter = "noop_sink";
  options.producer_config = "{}";
  options.settings.process = true;
  auto output = std::make_unique<IsolatedOutput>(options);
  std::string error;
  sink.struct_size = sizeof sink;
  if (output->create_sink(sink, error) != TSM_OK) {
    std::fprintf(stderr, "isolated create_sink failed: %s\n", error.c_str());
    std::abort();
  }
  return output;
}

void close_sink(tsm_sink& sink) {
  AbiBuffer error;
  sink.vtable->close(sink.self, 5'000'000'000, error.get());
}

// The delivery thread's emit call, in process: what an event costs the delivery thread.
void BM_EmitInProcess(benchmark::State& state) {
  tsm_sink sink = in_process_sink();
  const tsm_metric_event event = counter_event();
  AbiBuffer error;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sink.vtable->emit(sink.self, &event, error.get()));
  }
  close_sink(sink);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmitInProcess);

// The same call on the isolated proxy: a copy into the shared ring, while
// the helper drains it on the other core.
void BM_EmitIsolated(benchmark::State& state) {
  tsm_sink sink{};
  std::unique_ptr<IsolatedOutput> output = isolated_output(sink);
  const tsm_metric_event event = counter_event();
  AbiBuffer error;
  for (auto _ : state) {
    benchmark::DoNotOptimize(sink.vtable->emit(sink.self, &event, error.get()));
  }
  close_sink(sink);
  const IsolatedFigures f = output->figures();
  state.counters["delivered"] = static_cast<double>(f.delivered);
  state.counters["ring_full"] = static_cast<double>(f.dropped_ring_full);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmitIsolated);

// End to end: a batch of events handed over and delivered by the plugin in
// the helper (the timer stops when the helper's delivered count caught up).
void BM_DeliverBatchIsolated(benchmark::State& state) {
  const std::int64_t batch = state.range(0);
  tsm_sink sink{};
  std::unique_ptr<IsolatedOutput> output = isolated_output(sink);
  const tsm_metric_event event = counter_event();
  AbiBuffer error;
  std::uint64_t target = 0;
  for (auto _ : state) {
    for (std::int64_t i = 0; i < batch; ++i) sink.vtable->emit(sink.self, &event, error.get());
    target += static_cast<std::uint64_t>(batch);
    while (true) {
      const IsolatedFigures f = output->figures();
      if (f.delivered + f.dropped_ring_full >= target) break;
    }
  }
  close_sink(sink);
  const IsolatedFigures f = output->figures();
  state.counters["ring_full"] = static_cast<double>(f.dropped_ring_full);
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_DeliverBatchIsolated)->Arg(1)->Arg(10'000)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
