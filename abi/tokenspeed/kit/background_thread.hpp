/*
 * tokenspeed/kit/background_thread.hpp — starts a plugin's own thread (a
 * delivery loop, a file writer) with SIGPIPE blocked, so that a peer or a
 * FIFO reader that went away makes a write fail with EPIPE instead of
 * killing the engine. The caller's signal mask is restored at once; the new
 * thread inherits the blocked one. Header-only C++17, POSIX.
 */
#ifndef TOKENSPEED_KIT_BACKGROUND_THREAD_HPP
#define TOKENSPEED_KIT_BACKGROUND_THREAD_HPP

#include <pthread.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace tokenspeed::metrics::kit {

/* std::thread(f, args...), started with SIGPIPE blocked. Throws
 * std::system_error as std::thread does. */
template <class F, class... Args>
std::thread start_background_thread(F&& f, Args&&... args) {
  sigset_t block;
  sigset_t previous;
  sigemptyset(&block);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &previous);
  try {
    std::thread thread(std::forward<F>(f), std::forward<Args>(args)...);
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return thread;
  } catch (...) {
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    throw;
  }
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_BACKGROUND_THREAD_HPP
