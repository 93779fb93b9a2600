// multiprocess_run_dir.hpp — the launcher's per-run directory for producer
// metric files: created fresh and private (0700) per run, owned through a lock
// the live launcher holds, removed on normal exit; stale directories of dead
// launchers are removed, never merged. Also tells live processes from dead
// ones. Never used on the hot path.
#pragma once

#include <cstdint>
#include <filesystem>
#include <sys/types.h>

namespace tokenspeed::metrics {

// A process as the kernel knows it: the pid plus its start time (clock ticks
// since boot, /proc/<pid>/stat field 22), so a reused pid is not mistaken for
// the process that wrote a file. start_time 0 means "unknown": pid only.
struct ProcessInstance {
  pid_t pid = 0;
  std::uint64_t start_time = 0;
};

ProcessInstance current_process_instance() noexcept;
// True while the process exists (a zombie counts as alive until reaped) and
// its start time matches when one is known.
bool process_alive(const ProcessInstance& process) noexcept;

// $TMPDIR (or /tmp) / "tokenspeed-metrics-<uid>".
std::filesystem::path default_multiprocess_base_dir();

// The checks a launcher makes of an existing base directory (a directory,
// belonging to this user), without creating anything: a missing one is
// fine, startup creates it. Throws the same StartupError startup would.
void check_multiprocess_base_dir(const std::filesystem::path& base_dir);

// Threading: construct, use and destroy from one thread of the launcher. The
// directory is removed only by the process that created it, so a forked
// child that runs destructors never deletes it.
class MultiprocessRunDir {
 public:
  // Creates base_dir if missing (0700, must belong to this user), removes
  // stale run directories in it whose owner is dead, then creates a fresh
  // unique "run-XXXXXX" directory (0700) with an "owner" file that this
  // object keeps locked (flock, close-on-exec) until it is destroyed: the
  // lock, not a pid, tells other launchers the directory is live, so it
  // holds across PID namespaces (containers sharing a base directory).
  // Throws StartupError (key --metrics-multiproc-dir) when that fails.
  explicit MultiprocessRunDir(const std::filesystem::path& base_dir);
  ~MultiprocessRunDir();
  MultiprocessRunDir(const MultiprocessRunDir&) = delete;
  MultiprocessRunDir& operator=(const MultiprocessRunDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

  // Removes the directory and its files (idempotent; only in the creating process).
  void remove() noexcept;

  // Removes every "run-*" directory under base_dir whose owner file this
  // process can lock (its launcher is gone, in whatever PID namespace or on
  // whatever host it ran). A directory without such an owner file (still
  // being created, or made by a version that did not lock it) is removed only
  // once it is older than ten minutes. Returns how many were removed.
  // Directories of live launchers are left alone.
  static std::size_t remove_stale(const std::filesystem::path& base_dir) noexcept;

 private:
  std::filesystem::path path_;
  pid_t creator_ = 0;
  int owner_lock_ = -1;  // the owner file, locked while the directory lives
  bool removed_ = false;
};

}  // namespace tokenspeed::metrics
