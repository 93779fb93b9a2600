// growth_outputs_bench.cpp — how the record path grows with the number of
// external outputs (0, 1, 2, 4, 8) and of producer threads recording at once
// (1, 2, 4): counter inc and histogram observe through the collector's public
// handles, each thread on a series of its own, every output a sink that only
// counts, drained by its own delivery thread. Batched cases give the producer's cost
// per event with every push finding room; full-speed cases what the outputs
// receive per second, the drop ratio and the delivery threads' CPU; the store cases
// compare the producers' file store, and the placement cases where the rings'
// slot arrays lie. Figures and plots: docs/performance.md, made by
// test/bench/growth_outputs_plot.py.
#include <benchmark/benchmark.h>

#include <malloc.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/in_process_metric_store.hpp"
#include "prometheus/store/multiprocess_metric_store.hpp"
#include "prometheus/store/multiprocess_run_dir.hpp"
#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"
#include "record_path_metrics.hpp"

using namespace tokenspeed::metrics;

namespace {

using bench::kCounter;
using bench::kHistogram;

// An output whose emit only counts (the delivery thread, the ring and the ABI event
// are the host's own; only the plugin's work is left out).
struct CountingSink {
  std::atomic<std::uint64_t> emits{0};
  static int emit(void* self, const tsm_metric_event*, tsm_buffer*) {
    auto* s = static_cast<CountingSink*>(self);
    s->emits.store(s->emits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return TSM_OK;
  }
  static int close(void*, std::int64_t, tsm_buffer*) { return TSM_OK; }
};
const tsm_sink_vtable kCountingVtable{sizeof(tsm_sink_vtable), &CountingSink::emit,
                                      &CountingSink::close};

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// One run's pipeline: a store, `outputs` counting sinks behind one router
// (none: no router, the Prometheus aggregate only), a collector, and one
// counter and one histogram series per producer thread.
struct Rig {
  // file_store: the producers' store, slots in a mapped file of a run
  // directory (records packed one after another), instead of the in-process
  // store (every series on cache lines of its own).
  Rig(int outputs, int threads, bool file_store) {
    if (file_store) {
      run_dir = std::make_unique<MultiprocessRunDir>(std::filesystem::temp_directory_path() /
                                                     ("tsm-growth-" + std::to_string(::getpid())));
      store = std::make_unique<MultiprocessMetricStore>(MultiprocessStoreOptions{run_dir->path()});
    } else {
      store = std::make_unique<InProcessMetricStore>();
    }
    for (int i = 0; i < outputs; ++i) sinks.push_back(std::make_unique<CountingSink>());
    if (outputs > 0) {
      std::vector<OutputDefinition> definitions;
      for (int i = 0; i < outputs; ++i) {
        CountingSink* sink = sinks[static_cast<std::size_t>(i)].get();
        definitions.push_back(OutputDefinition{"counting-" + std::to_string(i),
                                               [sink](tsm_sink& out, std::string&) {
                                                 out.vtable = &kCountingVtable;
                                                 out.self = sink;
                                                 return 0;
                                               },
                                               ""});
      }
      RouterOptions options;
      options.log = [](std::string_view) {};
      router = std::make_unique<EventRouter>(std::move(definitions), options);
    }
    collector = std::make_unique<Collector>(*store, router.get());
    // The threads' series one after another, as an engine interns them.
    for (int t = 0; t < threads; ++t)
      counters.push_back(collector->counter(kCounter).labels("llama", std::to_string(t)));
    for (int t = 0; t < threads; ++t)
      histograms.push_back(collector->histogram(kHistogram).labels("llama", std::to_string(t)));
  }

  std::unique_ptr<MultiprocessRunDir> run_dir;
  std::unique_ptr<MetricStore> store;
  std::vector<std::unique_ptr<CountingSink>> sinks;
  std::unique_ptr<EventRouter> router;
  std::unique_ptr<Collector> collector;
  std::vector<Counter> counters;
  std::vector<Histogram> histograms;
  // Events recorded by every thread (the batched cases' count to wait for).
  std::atomic<std::uint64_t> recorded{0};

  // The fewest events any output has received so far.
  std::uint64_t least_received() const noexcept {
    std::uint64_t least = UINT64_MAX;
    for (const auto& sink : sinks) least = std::min(least, sink->emits.load());
    return least;
  }
};

// Thread 0 builds the rig before the loop; the others wait for it (the
// benchmark's own barrier is at the start of the loop).
std::atomic<Rig*> g_rig{nullptr};

Rig& shared_rig(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_rig.store(new Rig(static_cast<int>(state.range(0)), state.threads(), state.range(1) != 0),
                std::memory_order_release);
  }
  Rig* rig = nullptr;
  while ((rig = g_rig.load(std::memory_order_acquire)) == nullptr) std::this_thread::yield();
  return *rig;
}

// Thread 0, after every thread left the loop: drains and closes the outputs,
// reports what they received, and frees the rig.
void finish(benchmark::State& state, Rig& rig, double cpu_at_start,
            std::chrono::steady_clock::duration wall) {
  const double process_cpu = process_cpu_seconds() - cpu_at_start;
  const double wall_s = std::chrono::duration<double>(wall).count();
  const auto outputs = static_cast<std::size_t>(state.range(0));
  state.counters["outputs"] = static_cast<double>(outputs);
  state.counters["producer_threads"] = static_cast<double>(state.threads());
  state.counters["process_cpu_s"] = process_cpu;
  state.counters["wall_s"] = wall_s;
  if (rig.router != nullptr) {
    rig.router->close(std::chrono::seconds(5));
    std::uint64_t accepted = 0, delivered = 0, dropped = 0;
    for (const SinkFigures& s : rig.router->figures()) {
      accepted += s.accepted;
      delivered += s.delivered;
      dropped += s.dropped_ring_full;
    }
    state.counters["accepted"] = static_cast<double>(accepted);
    state.counters["delivered"] = static_cast<double>(delivered);
    state.counters["drop_ratio"] =
        accepted == 0 ? 0.0 : static_cast<double>(dropped) / static_cast<double>(accepted);
    // Every ring: threads x outputs x slots x 16 bytes.
    const std::size_t q = rig.router->options().queue_size;
    const std::size_t slots = std::bit_ceil(q + q / 2 + 2);
    state.counters["ring_bytes"] =
        static_cast<double>(rig.router->ring_sets() * outputs * slots * 16);
  }
  state.counters["file_store"] = static_cast<double>(state.range(1));
  rig.collector.reset();
  rig.router.reset();
  delete g_rig.exchange(nullptr, std::memory_order_acq_rel);
}

// Events one thread records per iteration of the batched cases: half a ring
// (the default queue holds 8192), so a push finds room once the delivery thread has
// drained the previous batch.
constexpr int kBatch = 4096;

// The producer's cost per event: each iteration records a batch (timed),
// then waits, outside the timing, until every output has received as many
// events as all threads recorded so far (or 20 ms passed: a dropped event is
// never received), so that the pushes find room and measure the push, not
// the cheaper drop of a full ring.
template <class Record>
void run_batched(benchmark::State& state, Rig& rig, Record record) {
  const auto t = static_cast<std::size_t>(state.thread_index());
  const double cpu_at_start = state.thread_index() == 0 ? process_cpu_seconds() : 0.0;
  const auto wall_start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) record(rig, t);
    if (rig.router != nullptr) {
      state.PauseTiming();
      const std::uint64_t recorded = rig.recorded.fetch_add(kBatch) + kBatch;
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
      while (rig.least_received() < recorded && std::chrono::steady_clock::now() < give_up)
        std::this_thread::yield();
      state.ResumeTiming();
    }
  }
  const auto wall = std::chrono::steady_clock::now() - wall_start;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * kBatch);
  if (state.thread_index() == 0) {
    // Counters are summed over the threads: only thread 0 sets them.
    state.counters["events_per_iteration"] = kBatch;
    finish(state, rig, cpu_at_start, wall);
  }
}

// The pipeline at full speed: every thread records as fast as it can, the
// delivery threads deliver what they can (a full ring drops and counts); what the
// outputs received per second is the delivery threads' limit.
template <class Record>
void run_full_speed(benchmark::State& state, Rig& rig, Record record) {
  const auto t = static_cast<std::size_t>(state.thread_index());
  const double cpu_at_start = state.thread_index() == 0 ? process_cpu_seconds() : 0.0;
  const auto wall_start = std::chrono::steady_clock::now();
  for (auto _ : state) record(rig, t);
  const auto wall = std::chrono::steady_clock::now() - wall_start;
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  if (state.thread_index() == 0) {
    state.counters["events_per_iteration"] = 1;
    finish(state, rig, cpu_at_start, wall);
  }
}

template <class Record>
void run(benchmark::State& state, bool batched, Record record, bool heap_rings = false) {
  Rig& rig = shared_rig(state);
  // This thread's rings are allocated on its first event; counted as recorded.
  // A ring's 256 KiB of slots is above malloc's mmap threshold: each array
  // is a mapping of its own, all starting at the same offset in a page.
  // heap_rings raises the threshold for that allocation, so the arrays come
  // from the heap one after another, each at another offset in its page.
  if (heap_rings) mallopt(M_MMAP_THRESHOLD, 32 << 20);
  record(rig, static_cast<std::size_t>(state.thread_index()));
  if (heap_rings) mallopt(M_MMAP_THRESHOLD, 128 << 10);
  rig.recorded.fetch_add(1);
  if (batched) {
    run_batched(state, rig, record);
  } else {
    run_full_speed(state, rig, record);
  }
}

void record_counter(Rig& rig, std::size_t t) { rig.counters[t].inc(); }

void record_histogram(Rig& rig, std::size_t t) {
  thread_local double v = 0.0;
  rig.histograms[t].observe(v);
  v = v > 2.5 ? 0.0 : v + 0.013;
}

}  // namespace

static void BM_GrowthCounterInc(benchmark::State& state) { run(state, true, record_counter); }
static void BM_GrowthHistogramObserve(benchmark::State& state) {
  run(state, true, record_histogram);
}
static void BM_GrowthCounterInc_FullSpeed(benchmark::State& state) {
  run(state, false, record_counter);
}
static void BM_GrowthHistogramObserve_FullSpeed(benchmark::State& state) {
  run(state, false, record_histogram);
}

// Args: the number of outputs, and 0 (the in-process store); Threads:
// producer threads recording at once.
static void growth_cases(benchmark::internal::Benchmark* b) {
  b->ArgNames({"outputs", "file_store"});
  for (int outputs : {0, 1, 2, 4, 8}) b->Args({outputs, 0});
  b->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
}
BENCHMARK(BM_GrowthCounterInc)->Apply(growth_cases);
BENCHMARK(BM_GrowthHistogramObserve)->Apply(growth_cases);
BENCHMARK(BM_GrowthCounterInc_FullSpeed)->Apply(growth_cases);
BENCHMARK(BM_GrowthHistogramObserve_FullSpeed)->Apply(growth_cases);

// The producers' store (file_store 1): each thread's series next to the
// others' in the mapped file, so that slots of two threads may share a line.
static void file_store_cases(benchmark::internal::Benchmark* b) {
  b->ArgNames({"outputs", "file_store"});
  for (int outputs : {0, 1}) b->Args({outputs, 0})->Args({outputs, 1});
  b->Threads(1)->Threads(2)->Threads(4)->UseRealTime();
}
BENCHMARK(BM_GrowthCounterInc)->Name("BM_StoreCounterInc")->Apply(file_store_cases);

// Where the rings' slot arrays lie (heap 0: one mapping each, every array
// at the same offset in its page; heap 1: on the heap, at differing
// offsets), with one producer thread.
static void BM_RingPlacementHistogram(benchmark::State& state) {
  run(state, true, record_histogram, state.range(2) != 0);
}
static void BM_RingPlacementCounter(benchmark::State& state) {
  run(state, true, record_counter, state.range(2) != 0);
}
static void placement_cases(benchmark::internal::Benchmark* b) {
  b->ArgNames({"outputs", "file_store", "heap"});
  for (int outputs : {4, 8}) b->Args({outputs, 0, 0})->Args({outputs, 0, 1});
  b->Threads(1)->UseRealTime();
}
BENCHMARK(BM_RingPlacementHistogram)->Apply(placement_cases);
BENCHMARK(BM_RingPlacementCounter)->Apply(placement_cases);

BENCHMARK_MAIN();
