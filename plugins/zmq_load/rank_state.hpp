// rank_state.hpp — the latest value of every field for one rank, written by
// emit and read by the sending thread (relaxed atomics: a message carries the
// latest values, not one instant), and the fpm commits of that rank in a
// fixed ring (one writer, one reader). Never allocates after construction.
// Tested in test/unit/zmq_load/rank_state_test.cpp.
#pragma once

#include <array>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "load_fields.hpp"

namespace tokenspeed::metrics::zmq_load {

// What one fpm commit carries: the group's values and the wall time of the
// committing event.
struct FpmRecord {
  std::array<double, kFpmGaugeCount> values{};
  double wall_time = 0.0;  // Unix seconds
};

// The values a message is built from, read at once.
struct RankSnapshot {
  std::array<double, kFieldCount> values{};  // NaN: never set
  double changed_at = 0.0;                   // Unix seconds of the last change
  bool fpm_seen = false;                     // a value of the fpm group was ever set
};

// Threading: set, commit_fpm and note_event from emit's thread; snapshot,
// take_fpm, version and take_events from the sending thread.
class RankState {
 public:
  static constexpr std::size_t kFpmRingSize = 64;

  RankState() noexcept;

  // Stores a value; true when it differs from the one held (the version moves).
  bool set(std::size_t field, double value, double wall_time) noexcept;
  // Copies the fpm group into the ring; false when the ring is full.
  bool commit_fpm(double wall_time) noexcept;
  void note_event() noexcept { events_.fetch_add(1, std::memory_order_relaxed); }
  void mark_seen() noexcept { seen_.store(true, std::memory_order_release); }

  bool seen() const noexcept { return seen_.load(std::memory_order_acquire); }
  uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }
  RankSnapshot snapshot() const noexcept;
  // The oldest commit not yet taken; false when there is none.
  bool take_fpm(FpmRecord& out) noexcept;
  // The events noted since the last call.
  uint64_t take_events() noexcept { return events_.exchange(0, std::memory_order_acq_rel); }

 private:
  std::array<std::atomic<double>, kFieldCount> values_;
  std::atomic<double> changed_at_{0.0};
  std::atomic<uint64_t> version_{0};
  std::atomic<uint64_t> events_{0};
  std::atomic<bool> seen_{false};
  std::atomic<bool> fpm_seen_{false};
  std::array<FpmRecord, kFpmRingSize> ring_{};
  std::atomic<uint64_t> ring_head_{0};  // next to write (emit's thread)
  std::atomic<uint64_t> ring_tail_{0};  // next to read (sending thread)
};

}  // namespace tokenspeed::metrics::zmq_load
