// thread_safety.hpp — the host's lock discipline in code: clang's
// thread-safety annotations (empty under other compilers) and the annotated
// Mutex, MutexLock and CondVar the host's shared state is locked with.
// `lint-thread-safety` runs clang's -Wthread-safety over host/ and fails on
// an access the annotations do not allow.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#if defined(__clang__)
#define TSM_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TSM_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a "capability" to clang).
#define TSM_CAPABILITY(name) TSM_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a lock for its lifetime.
#define TSM_SCOPED_CAPABILITY TSM_THREAD_ANNOTATION(scoped_lockable)
// A member read or written only with the lock held.
#define TSM_GUARDED_BY(x) TSM_THREAD_ANNOTATION(guarded_by(x))
// A pointer whose pointee is read or written only with the lock held.
#define TSM_PT_GUARDED_BY(x) TSM_THREAD_ANNOTATION(pt_guarded_by(x))
// A function called with the lock held.
#define TSM_REQUIRES(...) TSM_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
// A function that takes the lock and returns with it held.
#define TSM_ACQUIRE(...) TSM_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
// A function that releases a held lock.
#define TSM_RELEASE(...) TSM_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
// A function that takes the lock when it returns the given value.
#define TSM_TRY_ACQUIRE(...) TSM_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
// A function called without the lock (it takes it itself).
#define TSM_EXCLUDES(...) TSM_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// A function the analysis skips: say why at each use.
#define TSM_NO_THREAD_SAFETY_ANALYSIS TSM_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace tokenspeed::metrics {

class CondVar;

// std::mutex, as a capability the analysis tracks.
class TSM_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() TSM_ACQUIRE() { mutex_.lock(); }
  void unlock() TSM_RELEASE() { mutex_.unlock(); }
  bool try_lock() TSM_TRY_ACQUIRE(true) { return mutex_.try_lock(); }

 private:
  friend class CondVar;
  std::mutex mutex_;
};

// Holds a Mutex from construction to destruction; unlock() and lock() let a
// scope drop it around a call that must not run under it.
class TSM_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mutex) TSM_ACQUIRE(mutex) : mutex_(mutex) { mutex_.lock(); }
  // Takes over a Mutex the caller already locked (a successful try_lock).
  MutexLock(Mutex& mutex, std::adopt_lock_t) TSM_REQUIRES(mutex) : mutex_(mutex) {}
  ~MutexLock() TSM_RELEASE() {
    if (held_) mutex_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void unlock() TSM_RELEASE() {
    mutex_.unlock();
    held_ = false;
  }
  void lock() TSM_ACQUIRE() {
    mutex_.lock();
    held_ = true;
  }

 private:
  Mutex& mutex_;
  bool held_ = true;
};

// std::condition_variable waited on with a held Mutex. Wait in a loop,
// `while (!ready) cv.wait(mutex);`: a predicate lambda is analysed as a
// function of its own, without the lock.
class CondVar {
 public:
  void wait(Mutex& mutex) TSM_REQUIRES(mutex) {
    // Not std::condition_variable::wait: GCC 12 binds it to GLIBCXX_3.4.30,
    // beyond the build baseline (plugins/symbol-versions.txt).
    wait_until(mutex, std::chrono::steady_clock::time_point::max());
  }
  template <class Clock, class Duration>
  std::cv_status wait_until(Mutex& mutex, const std::chrono::time_point<Clock, Duration>& until)
      TSM_REQUIRES(mutex) {
    Borrowed borrowed(mutex.mutex_);
    return cv_.wait_until(borrowed.lock, until);
  }
  template <class Rep, class Period>
  std::cv_status wait_for(Mutex& mutex, const std::chrono::duration<Rep, Period>& period)
      TSM_REQUIRES(mutex) {
    Borrowed borrowed(mutex.mutex_);
    return cv_.wait_for(borrowed.lock, period);
  }
  void notify_one() noexcept { cv_.notify_one(); }
  void notify_all() noexcept { cv_.notify_all(); }

 private:
  // The caller's held mutex as std::condition_variable takes it; left held
  // for the caller when the wait returns or throws.
  struct Borrowed {
    explicit Borrowed(std::mutex& mutex) : lock(mutex, std::adopt_lock) {}
    ~Borrowed() { lock.release(); }
    Borrowed(const Borrowed&) = delete;
    Borrowed& operator=(const Borrowed&) = delete;
    std::unique_lock<std::mutex> lock;
  };

  std::condition_variable cv_;
};

}  // namespace tokenspeed::metrics
