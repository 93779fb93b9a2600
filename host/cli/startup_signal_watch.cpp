// startup_signal_watch.cpp — the thread that takes SIGINT and SIGTERM while
// the launcher starts, and ends a startup that does not return in time.
#include "cli/startup_signal_watch.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "core/signal_names.hpp"

namespace tokenspeed::metrics::cli {
namespace {

// How often the watcher looks whether startup has finished.
constexpr timespec kPollInterval{0, 50'000'000};

int take_signal(const sigset_t& signals) {
  const int received = ::sigtimedwait(&signals, nullptr, &kPollInterval);
  return received > 0 ? received : 0;
}

}  // namespace

StartupSignalWatch::StartupSignalWatch(const sigset_t& signals, std::chrono::nanoseconds grace)
    : signals_(signals), grace_(grace), thread_([this] { watch(); }) {}

StartupSignalWatch::~StartupSignalWatch() { finish(); }

int StartupSignalWatch::finish() {
  {
    MutexLock lock(mutex_);
    finished_ = true;
  }
  if (thread_.joinable()) thread_.join();
  MutexLock lock(mutex_);
  return received_;
}

void StartupSignalWatch::end_by(int signal_number) {
  std::fflush(nullptr);
  // The default action of SIGINT and SIGTERM ends the process, as it would
  // have without any of this; the exit status says which signal it was.
  ::signal(signal_number, SIG_DFL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signal_number);
  ::pthread_sigmask(SIG_UNBLOCK, &only, nullptr);
  ::raise(signal_number);
  ::_exit(128 + signal_number);  // not reached
}

void StartupSignalWatch::watch() {
  int first = 0;
  for (;;) {
    {
      MutexLock lock(mutex_);
      if (finished_) return;
    }
    first = take_signal(signals_);
    if (first != 0) break;
  }
  {
    MutexLock lock(mutex_);
    if (finished_) {
      // Startup ended while the signal arrived: the main loop takes it.
      ::kill(::getpid(), first);
      return;
    }
    received_ = first;
  }
  const double seconds = std::chrono::duration<double>(grace_).count();
  std::fprintf(stderr,
               "tokenspeed-metrics: %s during startup: stopping as soon as startup returns "
               "(at most %g s; a second signal stops at once)\n",
               signal_name(first), seconds);

  const auto deadline = std::chrono::steady_clock::now() + grace_;
  for (;;) {
    {
      MutexLock lock(mutex_);
      if (finished_) return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::fprintf(stderr,
                   "tokenspeed-metrics: startup did not return within %g s of %s (a plugin's "
                   "validate or start_node may be stuck); exiting at once\n",
                   seconds, signal_name(first));
      end_by(first);
    }
    if (const int again = take_signal(signals_); again != 0) {
      std::fprintf(stderr, "tokenspeed-metrics: %s again during startup: exiting at once\n",
                   signal_name(again));
      end_by(again);
    }
  }
}

}  // namespace tokenspeed::metrics::cli
