// exponential_slots.hpp — an exponential histogram series in its run of
// double slots (metric_store.hpp): the writers' observe, and the consistent
// copy a reader in another process takes. The bucket arithmetic is the
// kit's (tokenspeed/kit/exponential_histogram.hpp); this file is its storage
// in the slots, which live in the producer file and never move.
//
// The writers of one series (collector threads of one process) take the
// series' lock word: one uncontended atomic exchange, and a downscale moves
// many slots at once, which no run of independent atomic adds could do. They
// publish through a sequence counter (odd while a change is under way), so a
// reader never blocks a writer: it copies and retries when the counter moved.
// The fences are the C++ sequence-lock pattern (Boehm, "Can seqlocks get
// along with programming language memory models?"): free on x86. Every
// access is atomic, so ThreadSanitizer, which does not model fences, has no
// race to report either way.
// Tested in test/unit/core/exponential_slots_test.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <thread>

#include <tokenspeed/kit/exponential_histogram.hpp>

#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics {

// Slot layout of an exponential series (every value a double, exact: counts
// stay below 2^53, indexes and the scale are small integers):
//   [0] lock word (0 free, 1 held)   [1] sequence (odd while changing)
//   [2] scales lowered: the scale is max_scale minus it (zeroed slots
//       are an empty histogram at max_scale)
//                                    [3] count: zero count + the buckets'
//   [4] sum                          [5] zero count
//   [6] observations refused: NaN and +/-Inf (no bucket holds them)
//   [7] first positive index  [8] positive length (0: none)
//   [9] first negative index  [10] negative length   [11] unused
//   [12, 12 + m) positive counts, index first + k at 12 + k; then m
//   negative counts (m = max_buckets).
struct ExponentialSlot {
  static constexpr std::size_t lock = 0;
  static constexpr std::size_t sequence = 1;
  static constexpr std::size_t scales_lowered = 2;
  static constexpr std::size_t count = 3;
  static constexpr std::size_t sum = 4;
  static constexpr std::size_t zero_count = 5;
  static constexpr std::size_t not_finite = 6;
  static constexpr std::size_t positive_first = 7;
  static constexpr std::size_t positive_length = 8;
  static constexpr std::size_t negative_first = 9;
  static constexpr std::size_t negative_length = 10;
  static constexpr std::size_t buckets = 12;
};

inline std::size_t exponential_slot_count(const ExponentialHistogramOptions& options) noexcept {
  return ExponentialSlot::buckets + 2 * std::size_t{options.max_buckets};
}

namespace exponential_slots_detail {

inline double load(const double& slot) noexcept {
  return std::atomic_ref<const double>(slot).load(std::memory_order_relaxed);
}
inline void store(double& slot, double value) noexcept {
  std::atomic_ref<double>(slot).store(value, std::memory_order_relaxed);
}
inline std::int64_t load_int(const double& slot) noexcept {
  return static_cast<std::int64_t>(load(slot));
}

// One sign's run: index first + k counted at counts[k], k < length <= capacity.
struct Run {
  double* first;
  double* length;
  double* counts;
};

// Moves every count of run to its bucket `by` scales lower (index >> by).
// New positions never exceed old ones, so one ascending pass suffices.
inline void downscale(Run run, int by) noexcept {
  const std::int64_t length = load_int(*run.length);
  if (length == 0 || by == 0) return;
  const std::int64_t first = load_int(*run.first);
  const std::int64_t new_first = kit::exponential_detail::floor_shift(first, by);
  for (std::int64_t k = 0; k < length; ++k) {
    const double count = load(run.counts[k]);
    if (count == 0) continue;
    const std::int64_t to = kit::exponential_detail::floor_shift(first + k, by) - new_first;
    store(run.counts[k], 0);
    store(run.counts[to], load(run.counts[to]) + count);
  }
  const std::int64_t last = kit::exponential_detail::floor_shift(first + length - 1, by);
  store(*run.first, static_cast<double>(new_first));
  store(*run.length, static_cast<double>(last - new_first + 1));
}

// How many scales lower [low, high] fits in capacity buckets.
inline int scales_to_fit(std::int64_t low, std::int64_t high, std::uint32_t capacity) noexcept {
  int by = 0;
  while (kit::exponential_detail::floor_shift(high, by) -
             kit::exponential_detail::floor_shift(low, by) + 1 >
         static_cast<std::int64_t>(capacity))
    ++by;
  return by;
}

}  // namespace exponential_slots_detail

// Counts value weight times (sum gains total: value * weight, or the exact
// total an engine measured). NaN and +/-Inf are refused into their own slot.
// Called by any collector thread of the producer; never blocks on a reader.
inline void observe_exponential(double* slots, const ExponentialHistogramOptions& options,
                                double value, std::uint64_t weight, double total) noexcept {
  using namespace exponential_slots_detail;
  std::atomic_ref<double> lock(slots[ExponentialSlot::lock]);
  while (lock.exchange(1.0, std::memory_order_acquire) != 0.0) {
    while (lock.load(std::memory_order_relaxed) != 0.0) std::this_thread::yield();
  }
  std::atomic_ref<double> sequence(slots[ExponentialSlot::sequence]);
  const double before = sequence.load(std::memory_order_relaxed);
  sequence.store(before + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);

  const double w = static_cast<double>(weight);
  if (!std::isfinite(value)) {
    store(slots[ExponentialSlot::not_finite], load(slots[ExponentialSlot::not_finite]) + w);
  } else {
    const double magnitude = std::fabs(value);
    if (magnitude <= options.zero_threshold) {
      store(slots[ExponentialSlot::zero_count], load(slots[ExponentialSlot::zero_count]) + w);
    } else {
      const std::uint32_t m = options.max_buckets;
      Run positive{&slots[ExponentialSlot::positive_first],
                   &slots[ExponentialSlot::positive_length], &slots[ExponentialSlot::buckets]};
      Run negative{&slots[ExponentialSlot::negative_first],
                   &slots[ExponentialSlot::negative_length], &slots[ExponentialSlot::buckets + m]};
      Run run = value > 0 ? positive : negative;
      const double lowered = load(slots[ExponentialSlot::scales_lowered]);
      const auto scale = options.max_scale - static_cast<std::int32_t>(lowered);
      std::int64_t index = kit::exponential_bucket_index(magnitude, scale);
      std::int64_t first = load_int(*run.first);
      std::int64_t length = load_int(*run.length);
      if (length == 0) {
        first = index;
        length = 1;
      } else if (index < first || index >= first + length) {
        const std::int64_t low = std::min(first, index);
        const std::int64_t high = std::max(first + length - 1, index);
        if (const int by = scales_to_fit(low, high, m); by > 0) {
          downscale(positive, by);
          downscale(negative, by);
          store(slots[ExponentialSlot::scales_lowered], lowered + by);
          index = kit::exponential_detail::floor_shift(index, by);
          first = load_int(*run.first);
          length = load_int(*run.length);
        }
        if (index < first) {  // the run moves up to make room below it
          const std::int64_t shift = first - index;
          for (std::int64_t k = length - 1; k >= 0; --k) {
            store(run.counts[k + shift], load(run.counts[k]));
            store(run.counts[k], 0);
          }
          length += shift;
          first = index;
        } else if (index >= first + length) {
          length = index - first + 1;
        }
      }
      store(*run.first, static_cast<double>(first));
      store(*run.length, static_cast<double>(length));
      double& bucket = run.counts[index - first];
      store(bucket, load(bucket) + w);
    }
    store(slots[ExponentialSlot::count], load(slots[ExponentialSlot::count]) + w);
    store(slots[ExponentialSlot::sum], load(slots[ExponentialSlot::sum]) + total);
  }

  sequence.store(before + 2, std::memory_order_release);
  lock.store(0.0, std::memory_order_release);
}

// Copies the series at slots (being written by another process, perhaps)
// into copy (exponential_slot_count slots). True when the copy is one state
// the writer published; false when every try saw a change under way (a
// writer that died inside an observe): the copy is then the last try.
inline bool copy_exponential_slots(const double* slots, std::span<double> copy) noexcept {
  using exponential_slots_detail::load;
  std::atomic_ref<const double> sequence(slots[ExponentialSlot::sequence]);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const double before = sequence.load(std::memory_order_acquire);
    for (std::size_t i = 0; i < copy.size(); ++i) copy[i] = load(slots[i]);
    std::atomic_thread_fence(std::memory_order_acquire);
    const double after = sequence.load(std::memory_order_relaxed);
    if (before == after && std::fmod(before, 2.0) == 0.0) return true;
    if (attempt >= 16) std::this_thread::yield();
  }
  return false;
}

// The copy as an OTLP data point (the kit's merge input), for the launcher's
// merge. False when it is not a state a writer could publish (lengths or
// indexes out of range): the reader then leaves it out.
inline bool exponential_point(std::span<const double> copy,
                              const ExponentialHistogramOptions& options,
                              kit::OtlpExponentialPoint& point) {
  const std::uint32_t m = options.max_buckets;
  if (copy.size() != ExponentialSlot::buckets + 2 * std::size_t{m}) return false;
  const double lowered = copy[ExponentialSlot::scales_lowered];
  if (!(lowered >= 0 && lowered <= 30)) return false;
  point.scale = options.max_scale - static_cast<std::int32_t>(lowered);
  point.zero_threshold = options.zero_threshold;
  point.zero_count = static_cast<std::uint64_t>(copy[ExponentialSlot::zero_count]);
  point.sum = copy[ExponentialSlot::sum];
  point.min = point.max = 0;
  std::uint64_t count = point.zero_count;
  const auto take = [&](std::size_t first_slot, std::size_t length_slot, std::size_t counts_at,
                        kit::OtlpExponentialBuckets& out) {
    const double length = copy[length_slot];
    if (!(length >= 0 && length <= m)) return false;
    out.offset = static_cast<std::int32_t>(copy[first_slot]);
    out.bucket_counts.resize(static_cast<std::size_t>(length));
    for (std::size_t k = 0; k < out.bucket_counts.size(); ++k) {
      out.bucket_counts[k] = static_cast<std::uint64_t>(copy[counts_at + k]);
      count += out.bucket_counts[k];
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
