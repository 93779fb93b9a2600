// series_table.cpp — numbering series for the rings; chunks are allocated as
// the numbers grow and freed with the table.
#include "pipeline/series_table.hpp"

namespace tokenspeed::metrics {

SeriesTable::~SeriesTable() {
  for (auto& chunk : chunks_) delete chunk.load(std::memory_order_relaxed);
}

std::uint32_t SeriesTable::add(const MetricSeries* series) {
  MutexLock lock(mutex_);
  if (size_ >= kChunks * kChunkSize) return kNone;
  const std::uint32_t number = size_;
  std::atomic<Chunk*>& slot = chunks_[number >> kChunkBits];
  Chunk* chunk = slot.load(std::memory_order_relaxed);
  if (chunk == nullptr) {
    chunk = new Chunk;
    chunk->series[number & (kChunkSize - 1)] = series;
    slot.store(chunk, std::memory_order_release);
  } else {
    chunk->series[number & (kChunkSize - 1)] = series;
  }
  ++size_;
  return number;
}

std::uint32_t SeriesTable::size() const {
  MutexLock lock(mutex_);
  return size_;
}

}  // namespace tokenspeed::metrics
