// event_ring.hpp — one bounded SPSC ring of event slots from one collector
// thread to one sink's worker, with that pair's producer counters. Allocated
// on a thread's first event; never resized or reallocated afterwards.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <boost/lockfree/spsc_queue.hpp>

#include "pipeline/metric_series.hpp"

namespace tokenspeed::metrics {

// Threading: push and the producer counters are touched only by the owning
// collector thread; pop only by the sink's worker; the counters are read by
// anyone (relaxed). The ring sits in its sink's singly linked list (next),
// which only grows (lock-free for the reader).
struct alignas(64) EventRing {
  explicit EventRing(std::size_t capacity) : queue(capacity) {}
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;

  // Single-writer counter increment: no read-modify-write instruction.
  static void bump(std::atomic<std::uint64_t>& counter) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }

  boost::lockfree::spsc_queue<EventSlot> queue;
  // The sink's list; read by the worker on every drain pass, written once.
  alignas(64) EventRing* next = nullptr;
  // Producer-side outcome of every event offered to this sink by this
  // thread. On a cache line of their own: the producer writes one per event,
  // and sharing a line with the consumer's read index would bounce it.
  alignas(64) std::atomic<std::uint64_t> pushed{0};   // entered the ring
  std::atomic<std::uint64_t> dropped_full{0};         // ring full
  std::atomic<std::uint64_t> dropped_disabled{0};     // sink already disabled
  std::atomic<std::uint64_t> dropped_after_close{0};  // close had begun
};

}  // namespace tokenspeed::metrics
