// allocation_counter.hpp — counts the operator new calls of the threads that
// ask for it: the proof that a hot path allocates nothing. The replacement
// allocation functions are in allocation_counter.cpp; a test or benchmark
// program links that file once. Test code only.
#pragma once

namespace tokenspeed::metrics::test {

// Allocations made so far by threads while they were counting.
long allocation_count() noexcept;
// Whether the calling thread's allocations are counted (off by default).
void count_this_thread(bool on) noexcept;

// Counts the calling thread's allocations from construction to destruction.
class CountAllocations {
 public:
  CountAllocations() noexcept : start_(allocation_count()) { count_this_thread(true); }
  ~CountAllocations() { count_this_thread(false); }
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  long count() const noexcept { return allocation_count() - start_; }

 private:
  long start_;
};

}  // namespace tokenspeed::metrics::test
