// engine_simulator.cpp — plausible engine behaviour from a seeded generator:
// queue lengths that drift, KV usage that fills and drains, requests whose
// tokens stream in chunks recorded as one weighted observation each.
#include "simulator/engine_simulator.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace tokenspeed::metrics {
namespace {

// splitmix64: small, fast, and the same sequence on every machine.
std::uint64_t next_random(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double uniform(std::uint64_t& state) noexcept {
  return static_cast<double>(next_random(state) >> 11) * 0x1.0p-53;
}

int uniform_int(std::uint64_t& state, int low, int high) noexcept {
  return low + static_cast<int>(uniform(state) * (high - low + 1));
}

double exponential(std::uint64_t& state, double mean) noexcept {
  return -mean * std::log1p(-uniform(state));
}

// Sleeps in short slices so a stop request is seen within ~50 ms.
void sleep_unless_stopped(std::chrono::microseconds duration, const std::atomic<bool>& stop) {
  const auto end = std::chrono::steady_clock::now() + duration;
  while (!stop.load(std::memory_order_relaxed)) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(end - now, std::chrono::milliseconds(50)));
  }
}

}  // namespace

const MetricDefinition& simulated_metric(std::string_view name, const SimulationOptions& options) {
  if (!options.native_histograms) return tokenspeed_metric(name);
  static const std::vector<MetricDefinition> native = [] {
    std::vector<MetricDefinition> catalog = tokenspeed_catalog();
    for (MetricDefinition& metric : catalog) {
      if (metric.kind == MetricKind::histogram) metric.exponential = ExponentialHistogramOptions{};
    }
    return catalog;
  }();
  for (const MetricDefinition& metric : native) {
    if (metric.name == name) return metric;
  }
  return tokenspeed_metric(name);  // throws std::out_of_range, as for the classic catalog
}

SchedulerSimulator::SchedulerSimulator(Recorder& recorder, SimulationOptions options, int dp_rank)
    : options_(std::move(options)),
      rng_(options_.seed * 1000003 + static_cast<std::uint64_t>(dp_rank)) {
  const std::string rank = std::to_string(dp_rank);
  const std::string& model = options_.model_name;
  const std::string& app = options_.app_key;
  running_ = recorder.gauge(simulated_metric("tokenspeed:num_requests_running", options_))
                 .labels(model, app, rank);
  waiting_ = recorder.gauge(simulated_metric("tokenspeed:num_requests_waiting", options_))
                 .labels(model, app, rank);
  kv_usage_ = recorder.gauge(simulated_metric("tokenspeed:kv_cache_usage_perc", options_))
                  .labels(model, app, rank);
  iteration_tokens_ =
      recorder.histogram(simulated_metric("tokenspeed:iteration_tokens_total", options_))
          .labels(model, app, rank);
  accepted_tokens_ =
      recorder.counter(simulated_metric("tokenspeed:spec_decode_num_accepted_tokens", options_))
          .labels(model, app, rank);
  draft_tokens_ =
      recorder.counter(simulated_metric("tokenspeed:spec_decode_num_draft_tokens", options_))
          .labels(model, app, rank);
  drafts_ = recorder.counter(simulated_metric("tokenspeed:spec_decode_num_drafts", options_))
                .labels(model, app, rank);
  nan_aborted_ = recorder.counter(simulated_metric("tokenspeed:num_nan_aborted_requests", options_))
                     .labels(model, app, rank);
}

std::uint64_t SchedulerSimulator::iterate() {
  const int running = uniform_int(rng_, 8, 64);
  const int waiting = std::max(0, uniform_int(rng_, -20, 12));
  kv_level_ = std::clamp(kv_level_ + (uniform(rng_) - 0.48) * 0.05, 0.0, 1.0);
  running_.set(running);
  waiting_.set(waiting);
  kv_usage_.set(std::round(kv_level_ * 100.0) / 100.0);  // the engine reports two digits
  // A decode step: one token per running request, sometimes with a prefill chunk.
  const int prefill = uniform(rng_) < 0.2 ? uniform_int(rng_, 128, 4096) : 0;
  iteration_tokens_.observe(running + prefill);
  const int drafts = running;
  const int draft_tokens = drafts * 4;
  const int accepted = static_cast<int>(draft_tokens * (0.5 + 0.3 * uniform(rng_)));
  drafts_.inc(drafts);
  draft_tokens_.inc(draft_tokens);
  accepted_tokens_.inc(accepted);
  std::uint64_t events = 7;
  if (uniform(rng_) < 0.001) {
    nan_aborted_.inc();
    ++events;
  }
  return events;
}

void SchedulerSimulator::run(const std::atomic<bool>& stop) {
  while (!stop.load(std::memory_order_relaxed)) {
    iterate();
    const double mean = static_cast<double>(options_.iteration_time.count());
    sleep_unless_stopped(
        std::chrono::microseconds(static_cast<std::int64_t>(mean * (0.5 + uniform(rng_)))), stop);
  }
}

FrontendSimulator::FrontendSimulator(Recorder& recorder, SimulationOptions options)
    : options_(std::move(options)), rng_(options_.seed * 7919 + 17) {
  const std::string& model = options_.model_name;
  const std::string& app = options_.app_key;
  prompt_tokens_ =
      recorder.counter(simulated_metric("tokenspeed:prompt_tokens", options_)).labels(model, app);
  generation_tokens_ = recorder.counter(simulated_metric("tokenspeed:generation_tokens", options_))
                           .labels(model, app);
  requests_ =
      recorder.counter(simulated_metric("tokenspeed:num_requests", options_)).labels(model, app);
  success_ =
      recorder.counter(simulated_metric("tokenspeed:request_success", options_)).labels(model, app);
  prefix_hits_ = recorder.counter(simulated_metric("tokenspeed:prefix_cache_hits", options_))
                     .labels(model, app);
  ttft_ = recorder.histogram(simulated_metric("tokenspeed:time_to_first_token_seconds", options_))
              .labels(model, app);
  tpot_ =
      recorder
          .histogram(simulated_metric("tokenspeed:request_time_per_output_token_seconds", options_))
          .labels(model, app);
  itl_ = recorder.histogram(simulated_metric("tokenspeed:inter_token_latency_seconds", options_))
             .labels(model, app);
  e2e_ = recorder.histogram(simulated_metric("tokenspeed:e2e_request_latency_seconds", options_))
             .labels(model, app);
  auto& func = recorder.histogram(simulated_metric("tokenspeed:func_latency_seconds", options_));
  tokenize_latency_ = func.labels(model, app, "tokenize");
  detokenize_latency_ = func.labels(model, app, "detokenize");
}

std::uint64_t FrontendSimulator::finish_request() {
  const int prompt = uniform_int(rng_, 32, 4096);
  const int generated = uniform_int(rng_, 16, 1024);
  const int cached = static_cast<int>(prompt * uniform(rng_) * 0.6);
  const double ttft = 0.05 + exponential(rng_, 0.25) + prompt * 2e-5;
  const double per_token = 0.008 + exponential(rng_, 0.01);

  std::uint64_t events = 0;
  tokenize_latency_.observe(0.05 + prompt * 1e-5);
  // Streamed chunks: a chunk of n tokens that took interval seconds is ONE
  // observation of interval / n with weight n.
  double decode_time = 0;
  for (int left = generated - 1; left > 0;) {
    const int n = std::min(left, uniform_int(rng_, 1, 8));
    const double interval = n * per_token * (0.7 + 0.6 * uniform(rng_));
    itl_.observe(interval / n, static_cast<std::uint64_t>(n));
    decode_time += interval;
    left -= n;
    ++events;
  }
  const double e2e = ttft + decode_time;
  requests_.inc();
  success_.inc();
  prompt_tokens_.inc(prompt);
  generation_tokens_.inc(generated);
  prefix_hits_.inc(cached);
  ttft_.observe(ttft);
  tpot_.observe(generated > 1 ? decode_time / (generated - 1) : 0.0);
  e2e_.observe(e2e);
  detokenize_latency_.observe(0.05 + generated * 1e-5);
  return events + 10;
}

void FrontendSimulator::run(const std::atomic<bool>& stop) {
  const double mean_gap_us = options_.request_rate > 0 ? 1e6 / options_.request_rate : 1e6;
  while (!stop.load(std::memory_order_relaxed)) {
    if (options_.request_rate > 0) finish_request();
    sleep_unless_stopped(
        std::chrono::microseconds(static_cast<std::int64_t>(exponential(rng_, mean_gap_us))), stop);
  }
}

}  // namespace tokenspeed::metrics
