// credential_check_queue.hpp — the bounded queue of basic-auth checks (bcrypt,
// tens of milliseconds each) and the one thread that runs them, off the
// endpoint's I/O threads. Never holds more than its capacity and never runs a
// check that is no longer wanted (its connection evicted or gone).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

// One check waiting for the checking thread. The requester implements it;
// its destructor runs on whichever thread drops it (the checking thread, or
// the one calling stop), and should wipe the password it holds.
class CredentialCheck {
 public:
  virtual ~CredentialCheck() = default;
  // Asked just before run on the checking thread, and by submit on a full
  // queue, under the queue's lock: false skips the check without computing
  // anything (the requester evicted or went away). Must be cheap and never
  // call back into the queue.
  virtual bool wanted() = 0;
  // Computes the check and hands its answer back (posting it to the
  // requester's own thread). Must not throw; the queue swallows what it does
  // throw and counts it as failed.
  virtual void run() = 0;
};

// What the queue did with the checks submitted to it, since it started.
struct CredentialCheckFigures {
  std::uint64_t run = 0;      // checks run
  std::uint64_t skipped = 0;  // not wanted any more when their turn came
  std::uint64_t refused = 0;  // submitted while full (or stopped)
  std::uint64_t failed = 0;   // threw from run or wanted
};

// Threading: submit, figures and stop from any thread; the checks run on
// the queue's own thread, one at a time. The constructor starts the thread;
// stop (or the destructor) ends it.
class CredentialCheckQueue {
 public:
  // capacity: checks waiting or running at once (at least 1).
  explicit CredentialCheckQueue(std::size_t capacity);
  ~CredentialCheckQueue();
  CredentialCheckQueue(const CredentialCheckQueue&) = delete;
  CredentialCheckQueue& operator=(const CredentialCheckQueue&) = delete;

  // Queues check; false (check dropped) when capacity checks already wait or
  // run, or after stop: the requester answers at once instead. A full queue
  // first drops its waiting checks that are no longer wanted (counted as
  // skipped), asking each on the caller's thread.
  bool submit(std::unique_ptr<CredentialCheck> check);

  // Drops the waiting checks and tells the thread to end after the one it
  // runs; join waits for that. Both idempotent; join after stop only.
  void stop() noexcept;
  void join() noexcept;

  std::size_t capacity() const noexcept { return capacity_; }
  CredentialCheckFigures figures() const;

 private:
  void loop();

  const std::size_t capacity_;
  mutable Mutex mutex_;
  CondVar cv_;
  std::deque<std::unique_ptr<CredentialCheck>> waiting_ TSM_GUARDED_BY(mutex_);
  bool running_check_ TSM_GUARDED_BY(mutex_) = false;  // the thread holds a check it took
  bool stopping_ TSM_GUARDED_BY(mutex_) = false;
  CredentialCheckFigures figures_ TSM_GUARDED_BY(mutex_);
  std::thread thread_;
};

}  // namespace tokenspeed::metrics
