// rank_state.cpp — the per-rank latest values and the fpm commit ring.
#include "rank_state.hpp"

#include <limits>

namespace tokenspeed::metrics::zmq_load {

RankState::RankState() noexcept {
  for (auto& value : values_)
    value.store(std::numeric_limits<double>::quiet_NaN(), std::memory_order_relaxed);
}

bool RankState::set(std::size_t field, double value, double wall_time) noexcept {
  if (field >= static_cast<std::size_t>(Field::kFpmFirstGauge))
    fpm_seen_.store(true, std::memory_order_relaxed);
  const double held = values_[field].exchange(value, std::memory_order_relaxed);
  if (held == value) return false;
  changed_at_.store(wall_time, std::memory_order_relaxed);
  version_.fetch_add(1, std::memory_order_release);
  return true;
}

bool RankState::commit_fpm(double wall_time) noexcept {
  const uint64_t head = ring_head_.load(std::memory_order_relaxed);
  if (head - ring_tail_.load(std::memory_order_acquire) >= kFpmRingSize) return false;
  FpmRecord& record = ring_[head % kFpmRingSize];
  const std::size_t first = static_cast<std::size_t>(Field::kFpmFirstGauge);
  for (std::size_t i = 0; i < kFpmGaugeCount; ++i) {
    const double value = values_[first + i].load(std::memory_order_relaxed);
    record.values[i] = std::isnan(value) ? 0.0 : value;
  }
  record.wall_time = wall_time;
  ring_head_.store(head + 1, std::memory_order_release);
  return true;
}

RankSnapshot RankState::snapshot() const noexcept {
  RankSnapshot out;
  for (std::size_t i = 0; i < kFieldCount; ++i)
    out.values[i] = values_[i].load(std::memory_order_relaxed);
  out.changed_at = changed_at_.load(std::memory_order_relaxed);
  out.fpm_seen = fpm_seen_.load(std::memory_order_relaxed);
  return out;
}

bool RankState::take_fpm(FpmRecord& out) noexcept {
  const uint64_t tail = ring_tail_.load(std::memory_order_relaxed);
  if (tail == ring_head_.load(std::memory_order_acquire)) return false;
  out = ring_[tail % kFpmRingSize];
  ring_tail_.store(tail + 1, std::memory_order_release);
  return true;
}

}  // namespace tokenspeed::metrics::zmq_load
