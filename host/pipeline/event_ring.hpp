// event_ring.hpp — one bounded SPSC ring of 16-byte event slots from one
// collector thread to one sink's delivery thread, with that pair's producer counters.
// Allocated on a thread's first event; never resized or reallocated afterwards.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace tokenspeed::metrics {

// An event as the delivery thread reads it back out of a ring.
struct RingEvent {
  std::uint32_t series;   // the router's series number (see series_table.hpp)
  std::uint64_t weight;   // 1 except weighted histogram observations
  std::int64_t raw_time;  // an event_clock::raw_now() reading
  double value;
};

// Threading: try_push and the producer counters are written only by the
// owning collector thread; pop, empty and the consumer fields only by the
// sink's delivery thread; the counters are read by anyone (relaxed). The ring sits in
// its sink's singly linked list (next), which only grows (lock-free for the
// reader). When a thread exits its ring set goes to the next new thread, with
// its producer state: one producer at a time, handed over under a lock.
//
// Why not boost::lockfree::spsc_queue: its push reads the consumer's index on
// every event, so each drain pass of the delivery thread costs the producer a cache
// miss per event until the line settles; here the producer keeps a copy of
// the consumer's position and reads the shared one only when its copy says
// the ring is full. And a slot is 16 bytes, not 32: a 32-bit series number
// instead of a pointer, and a 32-bit time delta against a base the producer
// writes into the ring as a marker slot whenever the delta would not fit
// (a thread's first event, then at most once per 2^32 clock ticks, about
// 1.5 s of TSC or 4 s of nanoseconds). A weight other than 1 travels in a
// marker slot before its event. Four events share a cache line.
struct alignas(64) EventRing {
  // capacity: events the ring holds (the --metrics-reporter-queue-size).
  explicit EventRing(std::size_t capacity)
      : event_limit(capacity),
        slot_count(std::bit_ceil(capacity + capacity / 2 + 2)),
        mask(slot_count - 1),
        slots(new Slot[slot_count]) {}
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  // Single-writer counter increment: no read-modify-write instruction.
  static void bump(std::atomic<std::uint64_t>& counter) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  // ---- producer (the owning collector thread)

  // Queues one event and counts it in pushed; false when the ring is full
  // (nothing written, nothing counted: the caller counts the drop).
  bool try_push(std::uint32_t series, double value, std::uint64_t weight,
                std::int64_t raw_time) noexcept {
    const std::uint64_t delta =
        static_cast<std::uint64_t>(raw_time) - static_cast<std::uint64_t>(producer_time_base_);
    const bool new_base = !producer_has_base_ || delta > kMaxDelta;
    const std::uint64_t needed = 1 + (new_base ? 1 : 0) + (weight != 1 ? 1 : 0);
    const std::uint64_t events = pushed.load(std::memory_order_relaxed);
    if (events - cached_consumed_events_ >= event_limit ||
        write_slot_ - cached_read_slot_ + needed > slot_count) [[unlikely]] {
      // The copy says full: read the delivery thread's position, once.
      cached_consumed_events_ = consumed_events_.load(std::memory_order_acquire);
      cached_read_slot_ = read_slot_.load(std::memory_order_acquire);
      if (events - cached_consumed_events_ >= event_limit ||
          write_slot_ - cached_read_slot_ + needed > slot_count) {
        return false;
      }
    }
    std::uint64_t write = write_slot_;
    if (new_base) {
      slots[write++ & mask] = Slot{kTimeBaseTag, 0, static_cast<std::uint64_t>(raw_time)};
      producer_time_base_ = raw_time;
      producer_has_base_ = true;
    }
    if (weight != 1) slots[write++ & mask] = Slot{kWeightTag, 0, weight};
    slots[write++ & mask] = Slot{series, static_cast<std::uint32_t>(new_base ? 0 : delta),
                                 std::bit_cast<std::uint64_t>(value)};
    write_slot_ = write;
    // Counted before the slots are published, so the delivery thread can never
    // resolve an event the counter does not show yet.
    bump(pushed);
    published_write_slot_.store(write, std::memory_order_release);
    return true;
  }

  // ---- consumer (the sink's delivery thread)

  // Moves up to max queued events into out; returns how many.
  std::size_t pop(RingEvent* out, std::size_t max) noexcept {
    const std::uint64_t write = published_write_slot_.load(std::memory_order_acquire);
    std::uint64_t read = consumer_read_slot_;
    std::size_t n = 0;
    while (read != write && n < max) {
      const Slot& slot = slots[read++ & mask];
      if (slot.tag == kTimeBaseTag) {
        consumer_time_base_ = static_cast<std::int64_t>(slot.payload);
      } else if (slot.tag == kWeightTag) {
        consumer_weight_ = slot.payload;
      } else {
        out[n++] = RingEvent{slot.tag, consumer_weight_,
                             consumer_time_base_ + static_cast<std::int64_t>(slot.delta),
                             std::bit_cast<double>(slot.payload)};
        consumer_weight_ = 1;
      }
    }
    if (read == consumer_read_slot_) return 0;
    consumer_read_slot_ = read;
    consumer_events_ += n;
    read_slot_.store(read, std::memory_order_release);
    consumed_events_.store(consumer_events_, std::memory_order_release);
    return n;
  }

  bool empty() const noexcept {
    return published_write_slot_.load(std::memory_order_acquire) == consumer_read_slot_;
  }

  // Series numbers stop below the marker tags (checked against the series
  // table in series_table.hpp).
  static constexpr std::uint32_t kTimeBaseTag = 0xFFFFFFFFu;  // payload: the new time base
  static constexpr std::uint32_t kWeightTag = 0xFFFFFFFEu;    // payload: the next event's weight
  static constexpr std::uint32_t kMaxSeriesNumber = 0xFFFFFFF0u;
  static_assert(kMaxSeriesNumber < kWeightTag && kMaxSeriesNumber < kTimeBaseTag);

  const std::size_t event_limit;
  // A power of two with room for the markers: 16384 slots (256 KiB) for the
  // default 8192 events; at most 48 bytes per event for any capacity.
  const std::size_t slot_count;

 private:
  struct Slot {
    std::uint32_t tag;      // a series number, or a marker tag
    std::uint32_t delta;    // raw time minus the current base
    std::uint64_t payload;  // the value's bits, or the marker's payload
  };
  static_assert(sizeof(Slot) == 16);
  static constexpr std::uint64_t kMaxDelta = 0xFFFFFFFFu;

  const std::uint64_t mask;
  const std::unique_ptr<Slot[]> slots;

 public:
  // The sink's list; read by the delivery thread on every drain pass, written once.
  alignas(64) EventRing* next = nullptr;

  // Producer line: the producer's own state, the published write position
  // (read by the delivery thread once per pass) and the outcome of every event this
  // thread offered to this sink.
  alignas(64) std::atomic<std::uint64_t> published_write_slot_{0};
  std::atomic<std::uint64_t> pushed{0};                 // entered the ring
  std::atomic<std::uint64_t> dropped_ring_full{0};      // ring full
  std::atomic<std::uint64_t> dropped_sink_disabled{0};  // sink already disabled
  std::atomic<std::uint64_t> dropped_after_close{0};    // close had begun

 private:
  std::uint64_t write_slot_ = 0;
  std::uint64_t cached_read_slot_ = 0;
  std::uint64_t cached_consumed_events_ = 0;
  std::int64_t producer_time_base_ = 0;
  bool producer_has_base_ = false;

  // Consumer line: written by the delivery thread once per pass, read by the producer
  // only when its copy says the ring is full.
  alignas(64) std::atomic<std::uint64_t> read_slot_{0};
  std::atomic<std::uint64_t> consumed_events_{0};
  std::uint64_t consumer_read_slot_ = 0;
  std::uint64_t consumer_events_ = 0;
  std::int64_t consumer_time_base_ = 0;
  std::uint64_t consumer_weight_ = 1;
};

}  // namespace tokenspeed::metrics
