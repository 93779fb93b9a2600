// startup_signal_watch.hpp — keeps SIGINT and SIGTERM effective while a
// launcher starts. The command blocks them in every thread so that its main
// loop can take them with sigtimedwait; during startup (plugin loading,
// validate, start_node, spawning) this watcher's thread takes them instead,
// so a stop request is never left pending behind a slow or stuck startup.
// Tested in test/cli/test_startup_signals.py.
#pragma once

#include <signal.h>

#include <chrono>
#include <thread>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics::cli {

// Threading: constructed and finished on the main thread, which must have
// `signals` blocked already (the watcher's thread inherits the mask). The
// watcher's thread only waits for signals and writes one line on stderr.
//
// A first signal asks for a stop: once startup returns, finish() reports it
// and the command shuts the node down in order. When startup has not returned
// within `grace` of that signal, or a second signal comes, the process ends
// by the signal's default action (startup may be stuck in a plugin's code).
class StartupSignalWatch {
 public:
  StartupSignalWatch(const sigset_t& signals, std::chrono::nanoseconds grace);
  ~StartupSignalWatch();
  StartupSignalWatch(const StartupSignalWatch&) = delete;
  StartupSignalWatch& operator=(const StartupSignalWatch&) = delete;

  // Startup is over: stops the watcher (the signals stay blocked, for the
  // main loop) and returns the signal taken during startup, or 0.
  int finish();

 private:
  void watch();
  [[noreturn]] static void end_by(int signal_number);

  sigset_t signals_;
  std::chrono::nanoseconds grace_;
  Mutex mutex_;
  bool finished_ TSM_GUARDED_BY(mutex_) = false;
  int received_ TSM_GUARDED_BY(mutex_) = 0;
  std::thread thread_;
};

}  // namespace tokenspeed::metrics::cli
