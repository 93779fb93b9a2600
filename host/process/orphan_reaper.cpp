// orphan_reaper.cpp — peeks at the first zombie child with
// waitid(WNOWAIT), reaps it only when it is nobody's in this process and was
// already seen. Never reaps a child whose status someone here waits for.
#include "process/orphan_reaper.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "isolation/helper_process.hpp"

namespace tokenspeed::metrics {
namespace {

// The first child that has ended, left waitable; 0 when none.
pid_t first_ended_child() noexcept {
  siginfo_t info{};
  while (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
    if (errno != EINTR) return 0;  // ECHILD: no children at all
  }
  return info.si_pid;
}

}  // namespace

bool OrphanReaper::needed() noexcept { return ::getpid() == 1; }

std::size_t OrphanReaper::reap() noexcept {
  std::size_t reaped = 0;
  for (;;) {
    const pid_t pid = first_ended_child();
    // waitid reports the oldest ended child first: a child of this process's
    // own, not yet reaped by its owner, hides the others until the owner's
    // next poll.
    bool own = true;
    try {
      own = pid <= 0 || (is_own_ && is_own_(pid));
    } catch (...) {
      // The check failed: leave the child alone this time.
    }
    if (own) {
      seen_ = 0;
      return reaped;
    }
    if (pid != seen_) {
      seen_ = pid;  // reaped at the next call if nobody else did
      return reaped;
    }
    seen_ = 0;
    if (!isolation::reap_unless_own_helper(pid)) return reaped;
    ++reaped;
  }
}

}  // namespace tokenspeed::metrics
