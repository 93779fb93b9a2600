// one_output_rig.hpp — what the record-path benchmarks with one external
// output (pipeline-bench, views-bench) share: a plugin sink that only counts
// its emits, the output that hands it out, quiet router options, the drop
// figures printed beside a benchmark's time, and OneOutput, a store, that
// output and a collector recording into both. Benchmark code only.
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/in_process_metric_store.hpp"
#include "pipeline/collector.hpp"
#include "pipeline/event_router.hpp"

namespace tokenspeed::metrics::bench {

// ------------------------------------------------------------ no-op plugin
struct NoopSink {
  std::atomic<std::uint64_t> emits{0};
  std::chrono::milliseconds sleep{0};
  static int emit(void* self, const tsm_metric_event*, tsm_buffer*) {
    auto* s = static_cast<NoopSink*>(self);
    s->emits.store(s->emits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (s->sleep.count() > 0) std::this_thread::sleep_for(s->sleep);
    return TSM_OK;
  }
  static int close(void*, std::int64_t, tsm_buffer*) { return TSM_OK; }
};
inline const tsm_sink_vtable kNoopVtable{sizeof(tsm_sink_vtable), &NoopSink::emit,
                                         &NoopSink::close};

struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void wait() {
    std::unique_lock l(m);
    cv.wait(l, [&] { return open; });
  }
  void release() {
    std::lock_guard l(m);
    open = true;
    cv.notify_all();
  }
};

// The output's name, as a view's outputs list names it.
inline constexpr std::string_view kNoopOutput = "noop";

inline OutputDefinition noop_output(NoopSink* sink, Gate* gate = nullptr) {
  return OutputDefinition{std::string(kNoopOutput),
                          [sink, gate](tsm_sink& out, std::string&) {
                            if (gate != nullptr) gate->wait();
                            out.vtable = &kNoopVtable;
                            out.self = sink;
                            return 0;
                          },
                          ""};
}

inline RouterOptions quiet(std::size_t queue_size = 8192) {
  RouterOptions o;
  o.queue_size = queue_size;
  o.log = [](std::string_view) {};
  return o;
}

// After a benchmark with an output: what the delivery thread delivered and what the
// ring dropped, with drop_ratio = dropped_ring_full / accepted next to the time
// (a starved delivery thread makes the record path look cheaper: the drop is).
inline void report_drops(benchmark::State& state, EventRouter& router, long allocations) {
  router.close(std::chrono::seconds(5));
  const SinkFigures s = router.figures()[0];
  state.counters["delivered"] = static_cast<double>(s.delivered);
  state.counters["dropped_ring_full"] = static_cast<double>(s.dropped_ring_full);
  state.counters["drop_ratio"] =
      s.accepted == 0 ? 0.0
                      : static_cast<double>(s.dropped_ring_full) / static_cast<double>(s.accepted);
  state.counters["allocs"] = static_cast<double>(allocations);
  state.counters["parks"] = static_cast<double>(s.parks);
  state.counters["wakeups"] = static_cast<double>(s.wakeups);
}

// A store, one no-op output drained by its delivery thread, and a collector
// recording into both (members in this order: the collector goes first).
struct OneOutput {
  explicit OneOutput(CollectorOptions options = {})
      : collector{store, &router, std::move(options)} {}

  InProcessMetricStore store;
  NoopSink sink;
  EventRouter router{std::vector<OutputDefinition>{noop_output(&sink)}, quiet()};
  Collector collector;
};

}  // namespace tokenspeed::metrics::bench
