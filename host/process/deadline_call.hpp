// deadline_call.hpp — runs one plugin call on a thread of its own and waits
// for it until a deadline: a call that ignores its timeout is abandoned (its
// thread detached, the library never unloaded) so shutdown keeps its budget.
// Shutdown only; never on the hot path.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <thread>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

// Returns true when call returned before deadline; false when it was
// abandoned (it may still run and finish later, touching only what it owns).
// call must not throw. Threading: any thread.
inline bool call_with_deadline(std::function<void()> call,
                               std::chrono::steady_clock::time_point deadline) noexcept {
  struct State {
    Mutex mutex;
    CondVar done_cv;
    bool done TSM_GUARDED_BY(mutex) = false;
  };
  try {
    auto state = std::make_shared<State>();
    std::thread thread([state, call = std::move(call)] {
      call();
      MutexLock lock(state->mutex);
      state->done = true;
      state->done_cv.notify_all();
    });
    MutexLock lock(state->mutex);
    while (!state->done &&
           state->done_cv.wait_until(state->mutex, deadline) == std::cv_status::no_timeout) {
    }
    const bool done = state->done;
    lock.unlock();
    if (done) {
      thread.join();
    } else {
      thread.detach();
    }
    return done;
  } catch (...) {
    return false;  // no thread could be started: nothing ran
  }
}

}  // namespace tokenspeed::metrics
