// series_table.hpp — a router's numbering of the series it carries: a 32-bit
// number per series, so a ring slot holds 4 bytes instead of a pointer, and
// the delivery thread's lookup of the series from its number. Never shrinks.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "core/thread_safety.hpp"
#include "pipeline/event_ring.hpp"

namespace tokenspeed::metrics {

struct MetricSeries;

// Threading: add from any thread (a lock: interning is the slow path); find
// from any thread without a lock, for a number whose event it received
// through a ring (the ring's release/acquire pair orders the table write
// before it).
class SeriesTable {
 public:
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;
  static constexpr std::size_t kChunkBits = 12;  // 4096 series per chunk
  static constexpr std::size_t kChunks = 4096;   // 16 777 216 series at most
  // The largest number add() hands out.
  static constexpr std::uint32_t kMaxNumber =
      static_cast<std::uint32_t>((kChunks << kChunkBits) - 1);

  SeriesTable() = default;
  ~SeriesTable();
  SeriesTable(const SeriesTable&) = delete;
  SeriesTable& operator=(const SeriesTable&) = delete;

  // The next number, now naming series; kNone when the table is full.
  // Throws std::bad_alloc when a new chunk cannot be allocated.
  std::uint32_t add(const MetricSeries* series);

  const MetricSeries* find(std::uint32_t number) const noexcept {
    const Chunk* chunk = chunks_[number >> kChunkBits].load(std::memory_order_acquire);
    return chunk->series[number & (kChunkSize - 1)];
  }

  std::uint32_t size() const;

 private:
  static constexpr std::size_t kChunkSize = std::size_t{1} << kChunkBits;
  struct Chunk {
    std::array<const MetricSeries*, kChunkSize> series{};
  };

  std::array<std::atomic<Chunk*>, kChunks> chunks_{};
  mutable Mutex mutex_;  // serializes add(); find() reads chunks_ without it
  std::uint32_t size_ TSM_GUARDED_BY(mutex_) = 0;
};

// A ring slot carries a series number in the place of its marker tags: every
// number the table hands out must stay below them.
static_assert(SeriesTable::kMaxNumber <= EventRing::kMaxSeriesNumber,
              "the ring's series field cannot hold every series number of the table");
static_assert(SeriesTable::kNone > EventRing::kMaxSeriesNumber);

}  // namespace tokenspeed::metrics
