// orphan_reaper.hpp — what a launcher that is PID 1 (a container without an
// init process) owes the processes its namespace hands it: reaping the
// zombies it did not start, such as the sink helper of a producer that
// crashed. Never waits for a producer or for a sink helper this process
// started: their exit statuses belong to their supervisors.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace tokenspeed::metrics {

// Threading: one launcher thread (the one that reaps its producers).
class OrphanReaper {
 public:
  // is_own: true for a child this process started and will reap itself (a
  // producer not yet reaped). Sink helpers of this process are recognized
  // without it (isolation::reap_unless_own_helper).
  explicit OrphanReaper(std::function<bool(pid_t)> is_own) : is_own_(std::move(is_own)) {}

  // Whether this process is PID 1 of its PID namespace, where orphans land.
  static bool needed() noexcept;

  // Reaps the zombie children that are not this process's own and were
  // already zombies at the previous call (a grace period in which a plugin
  // waiting for a child of its own reaps it first). Never blocks; peeks
  // with waitid(WNOWAIT) before it reaps. Returns how many it reaped.
  std::size_t reap() noexcept;

 private:
  std::function<bool(pid_t)> is_own_;
  pid_t seen_ = 0;  // the unknown zombie the previous call saw first
};

}  // namespace tokenspeed::metrics
