// exponential_slot_reader.hpp — a reader's copy of an exponential series
// (exponential_slots.hpp), in another process or in the writer's own: a state
// the writer published, or, when the writer stopped inside an observe
// (killed, or stopped for longer than a scrape waits), that state brought
// back to a published one from the series' journal, without the observation
// in flight. A scrape never leaves a live series out; it never writes to the
// series.
// Tested in test/unit/core/exponential_slot_reader_test.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <thread>
#include <vector>

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "core/exponential_slots.hpp"

namespace tokenspeed::metrics {

enum class ExponentialCopy {
  published,  // a state the writer published
  repaired,   // the writer stopped inside an observe: its journal finished or undone
  unsettled,  // neither (the writer kept changing it, or the slots are no series)
};

namespace exponential_reader_detail {

using exponential_slots_detail::load;

inline std::uint32_t max_buckets_of(std::span<const double> copy) noexcept {
  return static_cast<std::uint32_t>((copy.size() - ExponentialSlot::buckets) / 2);
}

inline bool whole_in(double value, double low, double high) noexcept {
  return value >= low && value <= high && value == std::floor(value);
}

// Whether the journal's arguments are ones a writer could have left: a
// repair of anything else could reach past the series.
inline bool journal_valid(std::span<const double> copy) noexcept {
  const double m = max_buckets_of(copy);
  const auto within = [&](std::size_t slot, double low, double high) {
    return whole_in(copy[slot], low, high);
  };
  switch (static_cast<ExponentialJournal>(static_cast<int>(copy[ExponentialSlot::journal]))) {
    case ExponentialJournal::idle:
      return true;
    case ExponentialJournal::rescaling:
      return within(RescaleSlot::by, 1, 62) && within(RescaleSlot::scales_before, 0, 30) &&
             within(RescaleSlot::length, 0, m) && within(RescaleSlot::length + 1, 0, m) &&
             within(RescaleSlot::first, -(0x1p40), 0x1p40) &&
             within(RescaleSlot::first + 1, -(0x1p40), 0x1p40) &&
             within(RescaleSlot::progress, 0, 2 * (m + 1) - 1);
    case ExponentialJournal::shifting:
      return within(ShiftSlot::sign, 0, 1) && within(ShiftSlot::shift, 1, m) &&
             within(ShiftSlot::length, 0, m - copy[ShiftSlot::shift]) &&
             within(ShiftSlot::progress, 0, copy[ShiftSlot::length]) &&
             within(ShiftSlot::first, -(0x1p40), 0x1p40);
    case ExponentialJournal::counting:
      return within(CountSlot::target, ExponentialSlot::count,
                    static_cast<double>(copy.size() - 1)) &&
             copy[CountSlot::target] != ExponentialSlot::journal &&
             within(CountSlot::sign, -1, 1) &&
             (copy[CountSlot::sign] < 0 || (within(CountSlot::length_before, 0, m) &&
                                            within(CountSlot::first_before, -(0x1p31), 0x1p31)));
    default:
      return false;
  }
}

struct CopyStore {
  void operator()(double& slot, double value) const noexcept { slot = value; }
};

// A rescale resumes at a step: it must be one the new run has.
inline bool rescale_step_valid(std::span<const double> copy) noexcept {
  using kit::exponential_detail::floor_shift;
  const std::uint32_t m = max_buckets_of(copy);
  const auto at = static_cast<std::int64_t>(copy[RescaleSlot::progress]);
  const auto sign = static_cast<std::size_t>(at / (m + 1));
  const std::int64_t step = at % (m + 1) - 1;
  const auto by = static_cast<int>(copy[RescaleSlot::by]);
  const auto first = static_cast<std::int64_t>(copy[RescaleSlot::first + sign]);
  const auto length = static_cast<std::int64_t>(copy[RescaleSlot::length + sign]);
  if (length == 0) return step == -1;
  return step < floor_shift(first + length - 1, by) - floor_shift(first, by) + 1;
}

}  // namespace exponential_reader_detail

// Brings a copy taken of a writer stopped inside an observe back to a
// published state: a change of many slots finished, the observation's own
// stores undone. False when its journal is no state a writer leaves.
inline bool repair_exponential_copy(std::span<double> copy) noexcept {
  using namespace exponential_reader_detail;
  if (copy.size() < ExponentialSlot::buckets || !journal_valid(copy)) return false;
  exponential_slots_detail::ExponentialChanges<CopyStore> changes(copy.data(), max_buckets_of(copy),
                                                                  {});
  switch (static_cast<ExponentialJournal>(static_cast<int>(copy[ExponentialSlot::journal]))) {
    case ExponentialJournal::rescaling:
      if (!rescale_step_valid(copy)) return false;
      changes.rescale();
      break;
    case ExponentialJournal::shifting:
      changes.shift();
      break;
    case ExponentialJournal::counting:
      changes.undo_count();
      break;
    default:
      break;
  }
  copy[ExponentialSlot::journal] = static_cast<double>(ExponentialJournal::repaired);
  copy[ExponentialSlot::lock] = 0;
  if (std::fmod(copy[ExponentialSlot::sequence], 2.0) != 0.0) copy[ExponentialSlot::sequence] += 1;
  return true;
}

namespace exponential_reader_detail {

// One try at a published state, copying the header and the two runs only
// (a short copy fits between a busy writer's observes); the counts past the
// runs are 0 in every published state.
inline bool try_published_copy(const double* slots, std::span<double> copy) noexcept {
  std::atomic_ref<const double> sequence(slots[ExponentialSlot::sequence]);
  const std::uint32_t m = max_buckets_of(copy);
  const double before = sequence.load(std::memory_order_acquire);
  if (std::fmod(before, 2.0) != 0.0) return false;
  for (std::size_t i = 0; i < ExponentialSlot::buckets; ++i) copy[i] = load(slots[i]);
  for (int sign = 0; sign < 2; ++sign) {
    const std::size_t at = exponential_slots_detail::counts_slot(sign, m);
    const double length = copy[exponential_slots_detail::length_slot(sign)];
    const std::size_t n = length >= 0 && length <= m ? static_cast<std::size_t>(length) : m;
    for (std::size_t k = 0; k < n; ++k) copy[at + k] = load(slots[at + k]);
    std::fill(copy.begin() + static_cast<std::ptrdiff_t>(at + n),
              copy.begin() + static_cast<std::ptrdiff_t>(at + m), 0.0);
  }
  std::atomic_thread_fence(std::memory_order_acquire);
  return sequence.load(std::memory_order_relaxed) == before;
}

inline void full_copy(const double* slots, std::span<double> copy) noexcept {
  for (std::size_t i = 0; i < copy.size(); ++i) copy[i] = load(slots[i]);
}

}  // namespace exponential_reader_detail

// How long a scrape waits for a live writer to publish before it takes the
// series as the writer left it (a writer stopped mid-observe, as by SIGSTOP).
inline constexpr std::chrono::milliseconds kExponentialCopyPatience{20};

// Copies the series at slots into copy (exponential_slot_count slots). A
// gone writer's series is frozen: one copy, repaired when it stopped inside
// an observe. A live writer's is retried until published, for at most
// kExponentialCopyPatience; then, when two copies a yield apart are equal
// (the writer is not running), repaired as a gone writer's.
inline ExponentialCopy copy_exponential_slots(const double* slots, std::span<double> copy,
                                              bool writer_gone = false) noexcept {
  using namespace exponential_reader_detail;
  if (copy.size() < ExponentialSlot::buckets + 8) return ExponentialCopy::unsettled;
  if (!writer_gone) {
    const auto deadline = std::chrono::steady_clock::now() + kExponentialCopyPatience;
    for (int attempt = 0;; ++attempt) {
      if (try_published_copy(slots, copy)) return ExponentialCopy::published;
      if (attempt >= 16) std::this_thread::yield();
      if (attempt % 16 == 15 && std::chrono::steady_clock::now() >= deadline) break;
    }
  }
  full_copy(slots, copy);
  if (!writer_gone) {
    std::vector<double> again(copy.size());
    std::this_thread::yield();
    full_copy(slots, again);
    if (!std::equal(copy.begin(), copy.end(), again.begin())) return ExponentialCopy::unsettled;
  }
  if (std::fmod(copy[ExponentialSlot::sequence], 2.0) == 0.0 &&
      copy[ExponentialSlot::journal] == static_cast<double>(ExponentialJournal::idle)) {
    return ExponentialCopy::published;
  }
  return repair_exponential_copy(copy) ? ExponentialCopy::repaired : ExponentialCopy::unsettled;
}

// The copy as an OTLP data point (the kit's merge input), for the launcher's
// merge. False when it is not a state a writer could publish (lengths or
// indexes out of range): the reader then leaves it out.
inline bool exponential_point(std::span<const double> copy,
                              const ExponentialHistogramOptions& options,
                              kit::ExponentialPoint& point) {
  using kit::exponential_detail::saturated_count;
  const std::uint32_t m = options.max_buckets;
  if (copy.size() != ExponentialSlot::buckets + 2 * std::size_t{m}) return false;
  const double lowered = copy[ExponentialSlot::scales_lowered];
  if (!(lowered >= 0 && lowered <= 30)) return false;
  point.scale = options.max_scale - static_cast<std::int32_t>(lowered);
  point.zero_threshold = options.zero_threshold;
  point.zero_count = saturated_count(copy[ExponentialSlot::zero_count]);
  point.sum = copy[ExponentialSlot::sum];
  point.min = point.max = 0;
  std::uint64_t count = point.zero_count;
  const auto take = [&](std::size_t first_slot, std::size_t length_slot, std::size_t counts_at,
                        kit::OtlpExponentialBuckets& out) {
    const double length = copy[length_slot];
    if (!(length >= 0 && length <= m)) return false;
    if (!(std::fabs(copy[first_slot]) < 0x1p31)) return false;
    out.offset = static_cast<std::int32_t>(copy[first_slot]);
    out.bucket_counts.resize(static_cast<std::size_t>(length));
    for (std::size_t k = 0; k < out.bucket_counts.size(); ++k) {
      out.bucket_counts[k] = saturated_count(copy[counts_at + k]);
      kit::exponential_detail::add_saturated(count, out.bucket_counts[k]);
    }
    return true;
  };
  if (!take(ExponentialSlot::positive_first, ExponentialSlot::positive_length,
            ExponentialSlot::buckets, point.positive) ||
      !take(ExponentialSlot::negative_first, ExponentialSlot::negative_length,
            ExponentialSlot::buckets + m, point.negative))
    return false;
  point.count = count;
  return point.scale >= kit::kExponentialMinScale && point.scale <= kit::kExponentialMaxScale;
}

}  // namespace tokenspeed::metrics
