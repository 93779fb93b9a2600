// views_bench.cpp — what a view (--metrics-views) costs per event, against
// the same family without views in the same run: counter inc and histogram
// observe on a handle of a family a view rebuckets, renames, sends to one
// output only or drops a label of (goal: within 5 %), and labels() of an
// existing series with the engine's full label values when a view drops one
// or two of its labels (goal: within 1.2x). Each benchmark body runs once per
// view (the same machine code; only the family differs), with no external
// output and with one output; the Paired benchmarks time a batch without the
// view and a batch with it in turn, so that a loaded machine slows both
// sides of each ratio alike. Figures: docs/performance.md, "Views".
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/json/parse.hpp>

#include "allocation_counter.hpp"
#include "config/metric_views.hpp"
#include "core/in_process_metric_store.hpp"
#include "one_output_rig.hpp"
#include "pipeline/collector.hpp"
#include "record_path_metrics.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::CountAllocations;

namespace {

using bench::kCounter;
using bench::kHistogram;
using bench::OneOutput;

// The view a benchmark's family is created through; none is the baseline
// every other is divided by.
enum class View { none, rebucket, rename, outputs, drop_label, drop_two_labels };

// The engine's labels of the TokenSpeed catalog (model_name, app_key,
// dp_rank), with values as long as an engine's: labels() hashes and compares
// every byte of them.
const MetricDefinition kEngineCounter{"tokenspeed:generation_tokens",
                                      MetricKind::counter,
                                      "",
                                      "",
                                      {"model_name", "app_key", "dp_rank"},
                                      {},
                                      {}};
const std::string kModelName = "meta-llama/Llama-3.1-8B-Instruct";
const std::string kAppKey = "default";
const std::string kDpRank = "0";

// Twenty bounds, as many as the engine's kHistogram: a rebucketed observe
// searches as many bounds as the engine's would.
constexpr std::string_view kRebucketBounds =
    "[0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05,"
    " 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2.5]";

// The views file's text for a view of the family named name, read as
// --metrics-views reads a file (an empty list for View::none).
std::string views_text(View view, std::string_view name) {
  const std::string select = "{\"select\": {\"name\": \"" + std::string(name) + "\"}, ";
  switch (view) {
    case View::none:
      return "{\"views\": []}";
    case View::rebucket:
      return "{\"views\": [" + select + "\"buckets\": " + std::string(kRebucketBounds) + "}]}";
    case View::rename:
      return "{\"views\": [" + select + "\"name\": \"llm_viewed\", \"help\": \"Renamed\"}]}";
    case View::outputs:
      // The benchmark's own output only: not prometheus, so the series live
      // in the memory /metrics never reads.
      return "{\"views\": [" + select + "\"outputs\": [\"" + std::string(bench::kNoopOutput) +
             "\"]}]}";
    case View::drop_label:
      // rank of the record-path families, dp_rank of the engine's: a label
      // the family does not have is no error.
      return "{\"views\": [" + select + "\"drop_labels\": [\"dp_rank\", \"rank\"]}]}";
    case View::drop_two_labels:
      return "{\"views\": [" + select + "\"drop_labels\": [\"app_key\", \"dp_rank\"]}]}";
  }
  return "";
}

// The collector's options: no views at all for View::none (the path of a
// process started without --metrics-views), the view otherwise.
CollectorOptions options_with(View view, std::string_view name) {
  CollectorOptions options;
  if (view != View::none) {
    options.views = std::make_shared<const MetricViews>(
        metric_views_from_json(boost::json::parse(views_text(view, name)), "views-bench"));
  }
  return options;
}

// Events recorded per iteration with an output: half a ring (the default
// queue holds 8192), so every push finds room once the delivery thread has
// drained the previous batch.
constexpr int kBatch = 4096;

// With one output: each iteration records a batch (timed), then waits,
// outside the timing, until the sink has received every event recorded so
// far (or 20 ms passed), so the pushes measure the push, not the cheaper
// drop of a full ring. Reports seconds_per_event and the drops.
template <class Record>
void run_batched(benchmark::State& state, OneOutput& rig, Record record) {
  record();  // registers this thread's rings
  std::uint64_t recorded = 1;
  CountAllocations allocations;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) record();
    state.PauseTiming();
    recorded += kBatch;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (rig.sink.emits.load(std::memory_order_relaxed) < recorded &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
    state.ResumeTiming();
  }
  const long allocs = allocations.count();
  state.counters["events_per_iteration"] = kBatch;
  state.counters["seconds_per_event"] = benchmark::Counter(
      kBatch, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  bench::report_drops(state, rig.router, allocs);
}

// Histogram values swept over the buckets, as pipeline-bench observes them.
struct Sweep {
  double v = 0.0;
  double next() noexcept {
    const double value = v;
    v = v > 2.5 ? 0.0 : v + 0.013;
    return value;
  }
};

// A collector with no external output or with one, through a view: one side
// of a paired benchmark.
class Pipeline {
 public:
  Pipeline(bool with_output, View view, std::string_view name) {
    if (with_output) {
      rig_ = std::make_unique<OneOutput>(options_with(view, name));
    } else {
      store_ = std::make_unique<InProcessMetricStore>();
      collector_ = std::make_unique<Collector>(*store_, nullptr, options_with(view, name));
    }
  }
  Collector& collector() noexcept { return rig_ ? rig_->collector : *collector_; }
  // Waits until the output has received recorded events (or 20 ms passed):
  // the next batch then finds an empty ring and a parked delivery thread.
  void wait_delivered(std::uint64_t recorded) const {
    if (!rig_) return;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (rig_->sink.emits.load(std::memory_order_relaxed) < recorded &&
           std::chrono::steady_clock::now() < give_up) {
      std::this_thread::yield();
    }
  }
  void report(benchmark::State& state) {
    if (rig_) bench::report_drops(state, rig_->router, 0);
  }

 private:
  std::unique_ptr<OneOutput> rig_;
  std::unique_ptr<InProcessMetricStore> store_;
  std::unique_ptr<Collector> collector_;  // destroyed before store_
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values.empty() ? 0.0 : values[values.size() / 2];
}

// One batch of kBatch records into target, timed; both sides run this same
// instantiation, so the code is the same and only the family differs.
template <class Target, class Record>
double timed_batch(Target& target, Record record) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kBatch; ++i) record(target);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Each iteration times a batch into plain and one into viewed, in turns of
// which goes first, waiting for the output between batches (untimed). The
// counter ratio is the median over iterations of viewed's time over plain's
// in that iteration; plain_ns and viewed_ns are each side's median batch
// per event (medians: a batch the scheduler interrupted is an outlier).
template <class Target, class Record>
void run_paired(benchmark::State& state, Pipeline& plain, Target& plain_target, Pipeline& viewed,
                Target& viewed_target, Record record) {
  record(plain_target);  // registers this thread's rings
  record(viewed_target);
  std::uint64_t recorded = 1;
  std::vector<double> ratios;
  std::vector<double> plain_times;
  std::vector<double> viewed_times;
  bool viewed_first = false;
  for (auto _ : state) {
    recorded += kBatch;
    double plain_s = 0.0;
    double viewed_s = 0.0;
    if (viewed_first) {
      viewed_s = timed_batch(viewed_target, record);
      viewed.wait_delivered(recorded);
    }
    plain_s = timed_batch(plain_target, record);
    plain.wait_delivered(recorded);
    if (!viewed_first) {
      viewed_s = timed_batch(viewed_target, record);
      viewed.wait_delivered(recorded);
    }
    viewed_first = !viewed_first;
    state.SetIterationTime(plain_s + viewed_s);
    ratios.push_back(viewed_s / plain_s);
    plain_times.push_back(plain_s);
    viewed_times.push_back(viewed_s);
  }
  state.counters["ratio"] = median(ratios);
  state.counters["plain_ns"] = median(plain_times) * 1e9 / kBatch;
  state.counters["viewed_ns"] = median(viewed_times) * 1e9 / kBatch;
  plain.report(state);
}

}  // namespace

// ---------------------------------------------- (a) a handle's inc and observe

static void BM_Views_CounterInc_AggregateOnly(benchmark::State& state, View view) {
  InProcessMetricStore store;
  Collector collector(store, nullptr, options_with(view, kCounter.name));
  Counter c = collector.counter(kCounter).labels("llama", "0");
  CountAllocations allocations;
  for (auto _ : state) c.inc();
  state.counters["allocs"] = static_cast<double>(allocations.count());
}

static void BM_Views_CounterInc_OneOutput(benchmark::State& state, View view) {
  OneOutput rig(options_with(view, kCounter.name));
  Counter c = rig.collector.counter(kCounter).labels("llama", "0");
  run_batched(state, rig, [&] { c.inc(); });
}

static void BM_Views_HistogramObserve_AggregateOnly(benchmark::State& state, View view) {
  InProcessMetricStore store;
  Collector collector(store, nullptr, options_with(view, kHistogram.name));
  Histogram h = collector.histogram(kHistogram).labels("llama", "0");
  Sweep sweep;
  CountAllocations allocations;
  for (auto _ : state) h.observe(sweep.next());
  state.counters["allocs"] = static_cast<double>(allocations.count());
}

static void BM_Views_HistogramObserve_OneOutput(benchmark::State& state, View view) {
  OneOutput rig(options_with(view, kHistogram.name));
  Histogram h = rig.collector.histogram(kHistogram).labels("llama", "0");
  Sweep sweep;
  run_batched(state, rig, [&] { h.observe(sweep.next()); });
}

// -------------------------------- (b) labels() of an existing series, dropped labels

static void BM_Views_Labels_AggregateOnly(benchmark::State& state, View view) {
  InProcessMetricStore store;
  Collector collector(store, nullptr, options_with(view, kEngineCounter.name));
  CounterFamily& family = collector.counter(kEngineCounter);
  family.labels(kModelName, kAppKey, kDpRank).inc();  // the series exists before timing
  CountAllocations allocations;
  for (auto _ : state) benchmark::DoNotOptimize(family.labels(kModelName, kAppKey, kDpRank));
  state.counters["allocs"] = static_cast<double>(allocations.count());
}

static void BM_Views_LabelsInc_OneOutput(benchmark::State& state, View view) {
  OneOutput rig(options_with(view, kEngineCounter.name));
  CounterFamily& family = rig.collector.counter(kEngineCounter);
  run_batched(state, rig, [&] { family.labels(kModelName, kAppKey, kDpRank).inc(); });
}

// ---------------------------------------- paired: without and with the view in turn

static void BM_Views_Paired_CounterInc(benchmark::State& state, View view) {
  const bool with_output = state.range(0) != 0;
  Pipeline plain(with_output, View::none, kCounter.name);
  Pipeline viewed(with_output, view, kCounter.name);
  Counter a = plain.collector().counter(kCounter).labels("llama", "0");
  Counter b = viewed.collector().counter(kCounter).labels("llama", "0");
  run_paired(state, plain, a, viewed, b, [](Counter& c) { c.inc(); });
}

struct SweptHistogram {
  Histogram histogram;
  Sweep sweep;
};

static void BM_Views_Paired_HistogramObserve(benchmark::State& state, View view) {
  const bool with_output = state.range(0) != 0;
  Pipeline plain(with_output, View::none, kHistogram.name);
  Pipeline viewed(with_output, view, kHistogram.name);
  SweptHistogram a{plain.collector().histogram(kHistogram).labels("llama", "0"), {}};
  SweptHistogram b{viewed.collector().histogram(kHistogram).labels("llama", "0"), {}};
  run_paired(state, plain, a, viewed, b,
             [](SweptHistogram& h) { h.histogram.observe(h.sweep.next()); });
}

// Without an output labels() alone; with one, labels(...).inc().
static void BM_Views_Paired_Labels(benchmark::State& state, View view) {
  const bool with_output = state.range(0) != 0;
  Pipeline plain(with_output, View::none, kEngineCounter.name);
  Pipeline viewed(with_output, view, kEngineCounter.name);
  CounterFamily* a = &plain.collector().counter(kEngineCounter);
  CounterFamily* b = &viewed.collector().counter(kEngineCounter);
  if (with_output) {
    run_paired(state, plain, a, viewed, b,
               [](CounterFamily* family) { family->labels(kModelName, kAppKey, kDpRank).inc(); });
  } else {
    run_paired(state, plain, a, viewed, b, [](CounterFamily* family) {
      benchmark::DoNotOptimize(family->labels(kModelName, kAppKey, kDpRank));
    });
  }
}

// Arg 0: no external output; 1: one output.
#define PAIRED_CASE(bm, view) \
  BENCHMARK_CAPTURE(bm, view, View::view)->ArgName("output")->Arg(0)->Arg(1)->UseManualTime()

PAIRED_CASE(BM_Views_Paired_CounterInc, rename);
PAIRED_CASE(BM_Views_Paired_CounterInc, outputs);
PAIRED_CASE(BM_Views_Paired_CounterInc, drop_label);
PAIRED_CASE(BM_Views_Paired_HistogramObserve, rebucket);
PAIRED_CASE(BM_Views_Paired_HistogramObserve, rename);
PAIRED_CASE(BM_Views_Paired_HistogramObserve, outputs);
PAIRED_CASE(BM_Views_Paired_HistogramObserve, drop_label);
PAIRED_CASE(BM_Views_Paired_Labels, drop_label);
PAIRED_CASE(BM_Views_Paired_Labels, drop_two_labels);

#define VIEWS_CASE(bm, view) BENCHMARK_CAPTURE(bm, view, View::view)

VIEWS_CASE(BM_Views_CounterInc_AggregateOnly, none);
VIEWS_CASE(BM_Views_CounterInc_AggregateOnly, rename);
VIEWS_CASE(BM_Views_CounterInc_AggregateOnly, outputs);
VIEWS_CASE(BM_Views_CounterInc_AggregateOnly, drop_label);
VIEWS_CASE(BM_Views_CounterInc_OneOutput, none)->UseRealTime();
VIEWS_CASE(BM_Views_CounterInc_OneOutput, rename)->UseRealTime();
VIEWS_CASE(BM_Views_CounterInc_OneOutput, outputs)->UseRealTime();
VIEWS_CASE(BM_Views_CounterInc_OneOutput, drop_label)->UseRealTime();
VIEWS_CASE(BM_Views_HistogramObserve_AggregateOnly, none);
VIEWS_CASE(BM_Views_HistogramObserve_AggregateOnly, rebucket);
VIEWS_CASE(BM_Views_HistogramObserve_AggregateOnly, rename);
VIEWS_CASE(BM_Views_HistogramObserve_AggregateOnly, outputs);
VIEWS_CASE(BM_Views_HistogramObserve_AggregateOnly, drop_label);
VIEWS_CASE(BM_Views_HistogramObserve_OneOutput, none)->UseRealTime();
VIEWS_CASE(BM_Views_HistogramObserve_OneOutput, rebucket)->UseRealTime();
VIEWS_CASE(BM_Views_HistogramObserve_OneOutput, rename)->UseRealTime();
VIEWS_CASE(BM_Views_HistogramObserve_OneOutput, outputs)->UseRealTime();
VIEWS_CASE(BM_Views_HistogramObserve_OneOutput, drop_label)->UseRealTime();
VIEWS_CASE(BM_Views_Labels_AggregateOnly, none);
VIEWS_CASE(BM_Views_Labels_AggregateOnly, drop_label);
VIEWS_CASE(BM_Views_Labels_AggregateOnly, drop_two_labels);
VIEWS_CASE(BM_Views_LabelsInc_OneOutput, none)->UseRealTime();
VIEWS_CASE(BM_Views_LabelsInc_OneOutput, drop_label)->UseRealTime();
VIEWS_CASE(BM_Views_LabelsInc_OneOutput, drop_two_labels)->UseRealTime();

BENCHMARK_MAIN();
