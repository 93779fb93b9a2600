// deadline_call_test.cpp — a plugin call made with a deadline: one that
// returns in time is waited for, one that ignores its timeout is abandoned
// at the deadline and left to finish on its own thread.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "eventually.hpp"
#include "process/deadline_call.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;
using tokenspeed::metrics::test::eventually;

TEST_CASE("a call that returns before the deadline is waited for and reported done") {
  bool ran = false;
  CHECK(call_with_deadline([&] { ran = true; }, std::chrono::steady_clock::now() + 60s));
  CHECK(ran);  // joined: the write is visible without synchronization
}

TEST_CASE("a call that outlives its deadline is abandoned and finishes on its own") {
  struct Gate {
    std::mutex mutex;
    std::condition_variable cv;
    bool open = false;
    std::atomic<bool> finished{false};
  };
  auto gate = std::make_shared<Gate>();
  const auto deadline = std::chrono::steady_clock::now() + 50ms;
  CHECK_FALSE(call_with_deadline(
      [gate] {
        std::unique_lock lock(gate->mutex);
        gate->cv.wait(lock, [&] { return gate->open; });
        gate->finished = true;
      },
      deadline));
  CHECK(std::chrono::steady_clock::now() >= deadline);
  CHECK_FALSE(gate->finished);
  {
    std::lock_guard lock(gate->mutex);
    gate->open = true;
  }
  gate->cv.notify_all();
  CHECK(eventually([&] { return gate->finished.load(); }));
}
