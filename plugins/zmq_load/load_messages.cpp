// load_messages.cpp — LoadStat and ForwardPassMetrics from a rank's values.
#include "load_messages.hpp"

#include <cmath>

namespace tokenspeed::metrics::zmq_load {
namespace {

// A gauge's value as a count: 0 when never set, negative or not finite.
uint64_t count_of(double value) noexcept {
  if (!std::isfinite(value) || value <= 0) return 0;
  if (value >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(std::nearbyint(value));
}

double at(const RankSnapshot& snapshot, Field field) noexcept {
  return snapshot.values[static_cast<std::size_t>(field)];
}

// The fpm fields that are variances (float64); the others are counts.
bool is_variance(std::size_t fpm_index) noexcept {
  return kFpmFieldNames[fpm_index].substr(0, 4) == "var_";
}

void write_group(MsgpackWriter& out, const ForwardPass& pass, std::size_t first,
                 std::size_t count) noexcept {
  out.map(static_cast<uint32_t>(count));
  for (std::size_t i = first; i < first + count; ++i) {
    out.str(kFpmFieldNames[i]);
    if (is_variance(i))
      out.float64(std::isfinite(pass.values[i]) ? pass.values[i] : 0.0);
    else
      out.uint(count_of(pass.values[i]));
  }
}

}  // namespace

LoadStat load_stat(const RankSnapshot& snapshot, uint64_t configured_capacity, int64_t rank) {
  LoadStat stat;
  stat.num_running_reqs = count_of(at(snapshot, Field::kRunning));
  stat.num_waiting_reqs = count_of(at(snapshot, Field::kWaiting));
  uint64_t capacity = count_of(at(snapshot, Field::kCapacity));
  if (capacity == 0) capacity = count_of(at(snapshot, Field::kCacheConfigInfo));
  if (capacity == 0) capacity = configured_capacity;
  stat.max_total_num_tokens = capacity;
  const double tokens = at(snapshot, Field::kKvTokens);
  const double ratio = at(snapshot, Field::kKvUsageRatio);
  if (!std::isnan(tokens))
    stat.num_tokens = count_of(tokens);
  else if (std::isfinite(ratio))
    stat.num_tokens = count_of(ratio * static_cast<double>(capacity));
  stat.attn_dp_rank = rank;
  return stat;
}

void write_load_stat(MsgpackWriter& out, const LoadStat& stat) noexcept {
  out.array(6);
  out.str("LoadStat");
  out.uint(stat.num_running_reqs);
  out.uint(stat.num_waiting_reqs);
  out.uint(stat.num_tokens);
  out.uint(stat.max_total_num_tokens);
  if (stat.attn_dp_rank < 0)
    out.nil();
  else
    out.uint(static_cast<uint64_t>(stat.attn_dp_rank));
}

ForwardPass counts_only_forward_pass(const RankSnapshot& snapshot) {
  ForwardPass pass;
  const double running = at(snapshot, Field::kRunning);
  const double waiting = at(snapshot, Field::kWaiting);
  pass.values[4] = std::isnan(running) ? 0.0 : running;                   // scheduled decode
  pass.values[kFpmScheduledCount] = std::isnan(waiting) ? 0.0 : waiting;  // queued prefill
  pass.wall_time = snapshot.changed_at;
  return pass;
}

void write_forward_pass(MsgpackWriter& out, const ForwardPass& pass) noexcept {
  out.map(7);
  out.str("version");
  out.uint(1);
  out.str("worker_id");
  out.uint(pass.worker_id);
  out.str("dp_rank");
  out.uint(pass.dp_rank);
  out.str("counter_id");
  out.uint(pass.counter_id);
  out.str("wall_time");
  out.float64(pass.wall_time);
  out.str("scheduled_requests");
  write_group(out, pass, 0, kFpmScheduledCount);
  out.str("queued_requests");
  write_group(out, pass, kFpmScheduledCount, kFpmGaugeCount - kFpmScheduledCount);
}

}  // namespace tokenspeed::metrics::zmq_load
