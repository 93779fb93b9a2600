// gauge_dedup.hpp — the spec's gauge de-duplication rule per series: first value
// and every change out, repeats suppressed, a fresh snapshot one interval after
// the last emitted event. Never allocates, locks, or runs a timer.
#pragma once

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>

namespace tokenspeed::metrics {

// How values compare (documented in docs/event-pipeline.md):
//   * values are compared by bit pattern after every NaN is canonicalized to
//     one quiet NaN, so NaN repeated is suppressed like any repeated value and
//     NaN -> 1.0 -> NaN are changes;
//   * -0.0 and +0.0 are different values: a gauge going from 0.0 to -0.0 is
//     reported (the bit pattern is what a destination stores);
//   * +Inf and -Inf compare like any other value.
//
// Threading: should_emit may be called from any number of threads at once for
// the same series. The decision and the update of the state are one atomic
// step (a compare-and-swap on {value bits, emitted_at}), so among concurrent
// assignments of the same unchanged value at most one is emitted per interval,
// and every assignment that differs from the last emitted value is emitted.
class GaugeDedup {
 public:
  static constexpr std::uint64_t kCanonicalNan = 0x7ff8000000000000ull;
  // A NaN bit pattern canonicalization never produces: "no value emitted yet".
  static constexpr std::uint64_t kNoValue = ~std::uint64_t{0};

  static std::uint64_t canonical_bits(double value) noexcept {
    return std::isnan(value) ? kCanonicalNan : std::bit_cast<std::uint64_t>(value);
  }

  // Decides whether assigning value at monotonic time now_ns produces an
  // event, and if so records (value, now_ns) as the last emitted event.
  // interval_ns is the snapshot interval (the spec's one second).
  bool should_emit(double value, std::int64_t now_ns, std::int64_t interval_ns) noexcept {
    const std::uint64_t bits = canonical_bits(value);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    Word current = load_word();
    for (;;) {
      const auto last_bits = static_cast<std::uint64_t>(current);
      const auto emitted_at = static_cast<std::int64_t>(static_cast<std::uint64_t>(current >> 64));
      if (last_bits == bits && now_ns - emitted_at < interval_ns) return false;
      const Word desired = (static_cast<Word>(static_cast<std::uint64_t>(now_ns)) << 64) | bits;
      if (compare_exchange(&word_, current, desired)) return true;
    }
#else
    while (lock_.test_and_set(std::memory_order_acquire)) {
    }
    const bool emit = !(last_bits_ == bits && now_ns - emitted_at_ < interval_ns);
    if (emit) {
      last_bits_ = bits;
      emitted_at_ = now_ns;
    }
    lock_.clear(std::memory_order_release);
    return emit;
#endif
  }

 private:
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __extension__ typedef unsigned __int128 Word;  // low 64 bits: value bits; high: emitted_at

  // cmpxchg16b, inlined by the compiler for this one function only.
  __attribute__((target("cx16"))) static bool compare_exchange(Word* word, Word& expected,
                                                               Word desired) noexcept {
    const Word previous = __sync_val_compare_and_swap(word, expected, desired);
    const bool swapped = previous == expected;
    expected = previous;
    return swapped;
  }
  // A first guess of the word from two 8-byte loads, emitted_at first: a
  // pair torn by a concurrent update only makes the CAS fail and retry with
  // the real word. A suppression decided on a torn pair saw our value as the
  // last emitted one (read last) and an emitted_at no later than the real
  // one, unless two threads' clock readings land in the opposite order of
  // their updates: then a snapshot due within those nanoseconds waits for
  // the next assignment.
  Word load_word() const noexcept {
    using Half = std::uint64_t __attribute__((may_alias));
    const auto* halves = reinterpret_cast<const Half*>(&word_);
    const std::uint64_t high = __atomic_load_n(&halves[1], __ATOMIC_ACQUIRE);
    const std::uint64_t low = __atomic_load_n(&halves[0], __ATOMIC_ACQUIRE);
    return (static_cast<Word>(high) << 64) | low;
  }

  alignas(16) Word word_ = kNoValue;  // emitted_at 0, no value yet
#else
  std::atomic_flag lock_ = ATOMIC_FLAG_INIT;
  std::uint64_t last_bits_ = kNoValue;
  std::int64_t emitted_at_ = 0;
#endif
};

}  // namespace tokenspeed::metrics
