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
//
// A writer can die inside an observe (an engine OOM-killed): its file stays,
// frozen at that store. Every change therefore goes through a journal in the
// series' own slots, so that a reader can bring any frozen state back to a
// published one, losing at most the observation in flight: a downscale and
// a run's move (many slots) are finished by the reader from where the writer
// stopped (each step's input is journalled before its output is written);
// the observation's own few stores are undone from their journalled old
// values. Each store is a release store, so none is reordered before the
// journal entry that covers it; a dead process's stores are all in memory.
// exponential_slot_repair.hpp is the reader's side of the journal.
// Tested in test/unit/core/exponential_slots_test.cpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <type_traits>

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
//   [9] first negative index  [10] negative length
//   [11] journal: the change under way (ExponentialJournal)
//   [12, 22) the journal's arguments (the Rescale, Shift and Count slots)
//   [22, 22 + m) positive counts, index first + k at 22 + k; then m
//   negative counts (m = max_buckets). A count past its run's length is 0.
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
  static constexpr std::size_t journal = 11;
  static constexpr std::size_t buckets = 22;
};

// What the series' writer is changing, so what a reader must finish or undo
// when the writer stopped there. Written after its arguments and set back to
// idle when the change is complete, before the next one's arguments.
enum class ExponentialJournal : int {
  idle = 0,       // nothing half done
  rescaling = 1,  // both runs moving down some scales: a reader finishes it
  shifting = 2,   // one run moving up to make room below: a reader finishes it
  counting = 3,   // the observation's own stores: a reader undoes them
  repaired = 4,   // only in a reader's copy: it was brought back from a stopped writer
};

// The journal's arguments of each change (slots 12 to 21).
struct RescaleSlot {  // both runs `by` scales lower
  static constexpr std::size_t by = 12;
  static constexpr std::size_t scales_before = 13;
  static constexpr std::size_t first = 14;   // + sign (0 positive, 1 negative): before
  static constexpr std::size_t length = 16;  // + sign: before
  // sign * (m + 1) + step + 1: the step whose sum is journalled (-1: none yet)
  static constexpr std::size_t progress = 18;
  static constexpr std::size_t carry = 19;  // + step % 2: that step's sum
};
struct ShiftSlot {  // one run `shift` buckets up
  static constexpr std::size_t sign = 12;
  static constexpr std::size_t shift = 13;
  static constexpr std::size_t first = 14;     // before
  static constexpr std::size_t length = 15;    // before
  static constexpr std::size_t progress = 16;  // counts at and above it have moved
};
struct CountSlot {                           // the observation's own stores, undone from these
  static constexpr std::size_t target = 12;  // the count slot it adds to
  static constexpr std::size_t target_before = 13;
  static constexpr std::size_t count_before = 14;
  static constexpr std::size_t sum_before = 15;
  static constexpr std::size_t sign = 16;  // of the run whose bounds change; -1: none
  static constexpr std::size_t first_before = 17;
  static constexpr std::size_t length_before = 18;
};

inline std::size_t exponential_slot_count(const ExponentialHistogramOptions& options) noexcept {
  return ExponentialSlot::buckets + 2 * std::size_t{options.max_buckets};
}

namespace exponential_slots_detail {

inline double load(const double& slot) noexcept {
  return std::atomic_ref<const double>(slot).load(std::memory_order_relaxed);
}
inline std::int64_t load_int(const double& slot) noexcept {
  return static_cast<std::int64_t>(load(slot));
}

// The first slot and the length slot of a sign's run, and its first count.
inline std::size_t first_slot(int sign) noexcept {
  return sign == 0 ? ExponentialSlot::positive_first : ExponentialSlot::negative_first;
}
inline std::size_t length_slot(int sign) noexcept { return first_slot(sign) + 1; }
inline std::size_t counts_slot(int sign, std::uint32_t m) noexcept {
  return ExponentialSlot::buckets + (sign == 0 ? 0 : std::size_t{m});
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

// No hook: what the engine's writers use.
struct NoStoreHook {
  void operator()() const noexcept {}
};

// The changes of one series, each a sequence of journalled stores, written
// once for the writer and for a reader finishing a stopped writer's change
// in its copy. Store is how a slot is written: the writer's release store
// (then its test hook), or a plain assignment in a reader's private copy.
template <class Store>
class ExponentialChanges {
 public:
  ExponentialChanges(double* slots, std::uint32_t max_buckets, Store store) noexcept
      : slots_(slots), m_(max_buckets), store_(store) {}

  double get(std::size_t slot) const noexcept { return load(slots_[slot]); }
  std::int64_t get_int(std::size_t slot) const noexcept { return load_int(slots_[slot]); }
  void set(std::size_t slot, double value) noexcept { store_(slots_[slot], value); }

  // Both runs `by` scales lower, from the journal's progress on.
  void rescale() noexcept {
    const double progress = get(RescaleSlot::progress);
    const auto at = static_cast<std::int64_t>(progress);
    const int from_sign = static_cast<int>(at / (m_ + 1));
    const std::int64_t from_step = at % (m_ + 1) - 1;
    for (int sign = from_sign; sign < 2; ++sign) {
      rescale_run(sign, sign == from_sign ? from_step : -1);
    }
    set(ExponentialSlot::scales_lowered, get(RescaleSlot::scales_before) + get(RescaleSlot::by));
  }

  // One run `shift` buckets up, from the journal's progress down. The slot
  // a count moves to held 0 before (past the run, or moved away already), so
  // the larger of the two is the count whether or not the step was done.
  void shift() noexcept {
    const int sign = static_cast<int>(get_int(ShiftSlot::sign));
    const std::int64_t by = get_int(ShiftSlot::shift);
    double* counts = slots_ + counts_slot(sign, m_);
    for (std::int64_t k = get_int(ShiftSlot::progress) - 1; k >= 0; --k) {
      store_(counts[k + by], std::max(load(counts[k]), load(counts[k + by])));
      store_(counts[k], 0.0);
      set(ShiftSlot::progress, static_cast<double>(k));
    }
    set(first_slot(sign), get(ShiftSlot::first) - static_cast<double>(by));
    set(length_slot(sign), get(ShiftSlot::length) + static_cast<double>(by));
  }

  // The stores of an observation undone (a reader's repair).
  void undo_count() noexcept {
    set(static_cast<std::size_t>(get_int(CountSlot::target)), get(CountSlot::target_before));
    set(ExponentialSlot::count, get(CountSlot::count_before));
    set(ExponentialSlot::sum, get(CountSlot::sum_before));
    if (const std::int64_t sign = get_int(CountSlot::sign); sign >= 0) {
      set(first_slot(static_cast<int>(sign)), get(CountSlot::first_before));
      set(length_slot(static_cast<int>(sign)), get(CountSlot::length_before));
    }
  }

 private:
  // Step t writes the sum of the old counts that fall into new bucket t:
  // old positions k >= t, none written yet. Its sum goes to the journal
  // first (two carries, so the previous step's stays whole until the
  // progress names this one), so a reader redoes a step from its carry.
  void rescale_run(int sign, std::int64_t from) noexcept {
    using kit::exponential_detail::floor_shift;
    const int by = static_cast<int>(get_int(RescaleSlot::by));
    const std::int64_t first = get_int(RescaleSlot::first + sign);
    const std::int64_t length = get_int(RescaleSlot::length + sign);
    double* counts = slots_ + counts_slot(sign, m_);
    if (length > 0) {
      const std::int64_t new_first = floor_shift(first, by);
      const std::int64_t new_length = floor_shift(first + length - 1, by) - new_first + 1;
      if (from >= 0) store_(counts[from], get(RescaleSlot::carry + from % 2));
      std::int64_t k = 0;
      while (k < length && floor_shift(first + k, by) - new_first <= from) ++k;
      for (std::int64_t t = from + 1; t < new_length; ++t) {
        double sum = 0;
        for (; k < length && floor_shift(first + k, by) - new_first == t; ++k)
          sum += load(counts[k]);
        set(RescaleSlot::carry + t % 2, sum);
        set(RescaleSlot::progress, static_cast<double>(sign * (m_ + 1) + t + 1));
        store_(counts[t], sum);
      }
      for (std::int64_t j = new_length; j < length; ++j) store_(counts[j], 0.0);
      set(first_slot(sign), static_cast<double>(new_first));
      set(length_slot(sign), static_cast<double>(new_length));
    }
    if (sign == 0) set(RescaleSlot::progress, static_cast<double>(m_ + 1));
  }

  double* slots_;
  std::uint32_t m_;
  Store store_;
};

// The writer's store: a release store (never reordered before an earlier
// journal store), then the hook (a test's crash point).
template <class Hook>
struct ReleaseStore {
  Hook* hook;
  void operator()(double& slot, double value) const noexcept {
    std::atomic_ref<double>(slot).store(value, std::memory_order_release);
    (*hook)();
  }
};

template <class Hook>
class ExponentialWriter {
 public:
  ExponentialWriter(double* slots, const ExponentialHistogramOptions& options, Hook& hook) noexcept
      : options_(options), changes_(slots, options.max_buckets, ReleaseStore<Hook>{&hook}) {}

  void journal(ExponentialJournal state) noexcept {
    changes_.set(ExponentialSlot::journal, static_cast<double>(state));
  }

  // Index of magnitude in its run at the scale the run ends at, after
  // whatever downscale and move make room for it.
  std::int64_t make_room(int sign, double magnitude) noexcept {
    const std::uint32_t m = options_.max_buckets;
    const double lowered = changes_.get(ExponentialSlot::scales_lowered);
    const auto scale = options_.max_scale - static_cast<std::int32_t>(lowered);
    std::int64_t index = kit::exponential_bucket_index(magnitude, scale);
    const std::int64_t first = changes_.get_int(first_slot(sign));
    const std::int64_t length = changes_.get_int(length_slot(sign));
    if (length == 0 || (index >= first && index < first + length)) return index;
    const std::int64_t low = std::min(first, index);
    const std::int64_t high = std::max(first + length - 1, index);
    if (const int by = scales_to_fit(low, high, m); by > 0) {
      rescale(by, lowered);
      index = kit::exponential_detail::floor_shift(index, by);
    }
    if (const std::int64_t new_first = changes_.get_int(first_slot(sign)); index < new_first) {
      shift(sign, new_first - index);
    }
    return index;
  }

  // The observation's own stores, journalled for a reader to undo: into
  // target, or (sign >= 0) into bucket index of that sign's run.
  void count(std::size_t target, int sign, std::int64_t index, double weight,
             double total) noexcept {
    std::int64_t new_first = 0;
    std::int64_t new_length = 0;
    if (sign >= 0) {
      const std::int64_t first = changes_.get_int(first_slot(sign));
      const std::int64_t length = changes_.get_int(length_slot(sign));
      new_first = length == 0 ? index : first;
      new_length = length == 0 ? 1 : std::max(length, index - first + 1);
      target =
          counts_slot(sign, options_.max_buckets) + static_cast<std::size_t>(index - new_first);
    }
    begin_count(target, sign);
    if (sign >= 0) {
      changes_.set(first_slot(sign), static_cast<double>(new_first));
      changes_.set(length_slot(sign), static_cast<double>(new_length));
    }
    changes_.set(target, changes_.get(target) + weight);
    if (target != ExponentialSlot::not_finite) {
      changes_.set(ExponentialSlot::count, changes_.get(ExponentialSlot::count) + weight);
      changes_.set(ExponentialSlot::sum, changes_.get(ExponentialSlot::sum) + total);
    }
    journal(ExponentialJournal::idle);
  }

 private:
  void begin_count(std::size_t target, int sign) noexcept {
    changes_.set(CountSlot::target, static_cast<double>(target));
    changes_.set(CountSlot::target_before, changes_.get(target));
    changes_.set(CountSlot::count_before, changes_.get(ExponentialSlot::count));
    changes_.set(CountSlot::sum_before, changes_.get(ExponentialSlot::sum));
    changes_.set(CountSlot::sign, static_cast<double>(sign));
    if (sign >= 0) {
      changes_.set(CountSlot::first_before, changes_.get(first_slot(sign)));
      changes_.set(CountSlot::length_before, changes_.get(length_slot(sign)));
    }
    journal(ExponentialJournal::counting);
  }

  void rescale(int by, double lowered) noexcept {
    changes_.set(RescaleSlot::by, by);
    changes_.set(RescaleSlot::scales_before, lowered);
    for (int sign = 0; sign < 2; ++sign) {
      changes_.set(RescaleSlot::first + sign, changes_.get(first_slot(sign)));
      changes_.set(RescaleSlot::length + sign, changes_.get(length_slot(sign)));
    }
    changes_.set(RescaleSlot::progress, 0);
    journal(ExponentialJournal::rescaling);
    changes_.rescale();
    journal(ExponentialJournal::idle);
  }

  void shift(int sign, std::int64_t by) noexcept {
    const double length = changes_.get(length_slot(sign));
    changes_.set(ShiftSlot::sign, sign);
    changes_.set(ShiftSlot::shift, static_cast<double>(by));
    changes_.set(ShiftSlot::first, changes_.get(first_slot(sign)));
    changes_.set(ShiftSlot::length, length);
    changes_.set(ShiftSlot::progress, length);
    journal(ExponentialJournal::shifting);
    changes_.shift();
    journal(ExponentialJournal::idle);
  }

  const ExponentialHistogramOptions& options_;
  ExponentialChanges<ReleaseStore<Hook>> changes_;
};

}  // namespace exponential_slots_detail

// Counts value weight times (sum gains total: value * weight, or the exact
// total an engine measured). NaN and +/-Inf are refused into their own slot.
// Called by any collector thread of the producer; never blocks on a reader.
// hook runs after every store (a test stops the writer there).
template <class Hook = exponential_slots_detail::NoStoreHook>
inline void observe_exponential(double* slots, const ExponentialHistogramOptions& options,
                                double value, std::uint64_t weight, double total,
                                Hook&& hook = {}) noexcept {
  using namespace exponential_slots_detail;
  std::atomic_ref<double> lock(slots[ExponentialSlot::lock]);
  while (lock.exchange(1.0, std::memory_order_acquire) != 0.0) {
    while (lock.load(std::memory_order_relaxed) != 0.0) std::this_thread::yield();
  }
  std::atomic_ref<double> sequence(slots[ExponentialSlot::sequence]);
  const double before = sequence.load(std::memory_order_relaxed);
  sequence.store(before + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  hook();

  ExponentialWriter<std::remove_reference_t<Hook>> writer(slots, options, hook);
  const double w = static_cast<double>(weight);
  const double magnitude = std::fabs(value);
  if (!std::isfinite(value)) {
    writer.count(ExponentialSlot::not_finite, -1, 0, w, 0);
  } else if (magnitude <= options.zero_threshold) {
    writer.count(ExponentialSlot::zero_count, -1, 0, w, total);
  } else {
    const int sign = value > 0 ? 0 : 1;
    writer.count(0, sign, writer.make_room(sign, magnitude), w, total);
  }

  sequence.store(before + 2, std::memory_order_release);
  hook();
  lock.store(0.0, std::memory_order_release);
}

}  // namespace tokenspeed::metrics
