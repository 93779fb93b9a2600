// thread_safety_test.cpp — the annotated Mutex, MutexLock and CondVar lock,
// unlock and wait as the std types they wrap (the analysis itself is
// lint-thread-safety's).
#include <catch2/catch.hpp>

#include <chrono>
#include <mutex>
#include <thread>

#include "core/thread_safety.hpp"

using namespace tokenspeed::metrics;

namespace {
struct Flag {
  Mutex mutex;
  CondVar cv;
  bool set TSM_GUARDED_BY(mutex) = false;
};
}  // namespace

TEST_CASE("a MutexLock holds its mutex for its scope, and may drop and retake it") {
  Mutex mutex;
  {
    MutexLock lock(mutex);
    bool taken_elsewhere = false;
    std::thread([&] {
      if (mutex.try_lock()) {
        taken_elsewhere = true;
        mutex.unlock();
      }
    }).join();
    CHECK_FALSE(taken_elsewhere);
    lock.unlock();
    CHECK(mutex.try_lock());
    mutex.unlock();
    lock.lock();
  }
  CHECK(mutex.try_lock());
  mutex.unlock();
}

TEST_CASE("a MutexLock adopts a mutex taken by try_lock and releases it") {
  Mutex mutex;
  REQUIRE(mutex.try_lock());
  { MutexLock lock(mutex, std::adopt_lock); }
  CHECK(mutex.try_lock());
  mutex.unlock();
}

TEST_CASE("a CondVar wakes a waiter that holds the mutex") {
  Flag flag;
  std::thread setter([&] {
    {
      MutexLock lock(flag.mutex);
      flag.set = true;
    }
    flag.cv.notify_all();
  });
  {
    MutexLock lock(flag.mutex);
    while (!flag.set) flag.cv.wait(flag.mutex);
    CHECK(flag.set);
  }
  setter.join();
}

TEST_CASE("a CondVar's timed waits time out with the mutex held again") {
  Flag flag;
  MutexLock lock(flag.mutex);
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(5);
  while (!flag.set && flag.cv.wait_until(flag.mutex, until) == std::cv_status::no_timeout) {
  }
  CHECK(std::chrono::steady_clock::now() >= until);
  CHECK(flag.cv.wait_for(flag.mutex, std::chrono::milliseconds(1)) == std::cv_status::timeout);
  CHECK_FALSE(flag.set);
}
