// multiprocess_run_dir_test.cpp — the per-run directory: fresh, private,
// removed on normal exit, owned through a lock its launcher holds, stale runs
// of dead launchers removed, never reused.
#include <catch2/catch.hpp>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prometheus/store/multiprocess_run_dir.hpp"
#include "core/startup_error.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::TempDir;

pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// True when another open file description holds the lock of the owner file
// (flock locks belong to open file descriptions, so this process's own
// descriptor conflicts with the directory's like another process's would).
bool owner_locked(const std::filesystem::path& run_dir) {
  const int fd = ::open((run_dir / "owner").c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const bool locked = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);
  return locked;
}

// An owner file in the current format, naming a pid (which the cleanup must
// not trust: in another PID namespace it means another process).
void write_owner(const std::filesystem::path& run_dir, pid_t pid) {
  std::filesystem::create_directory(run_dir);
  std::ofstream(run_dir / "owner") << pid << " 0 flock other-host\n";
  std::ofstream(run_dir / "producer_1.db") << "data";
}

// The launcher of a run directory, as a live process elsewhere would be: the
// owner file opened and locked by this test. Unlocked when destroyed.
struct OwnerLock {
  int fd = -1;
  explicit OwnerLock(const std::filesystem::path& run_dir) {
    fd = ::open((run_dir / "owner").c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(::flock(fd, LOCK_EX | LOCK_NB) == 0);
  }
  ~OwnerLock() { ::close(fd); }
  OwnerLock(const OwnerLock&) = delete;
  OwnerLock& operator=(const OwnerLock&) = delete;
};

void make_older_than_ten_minutes(const std::filesystem::path& run_dir) {
  std::filesystem::last_write_time(
      run_dir, std::filesystem::file_time_type::clock::now() - std::chrono::minutes(11));
}

}  // namespace

TEST_CASE("each run gets a fresh private (0700) directory that is removed on normal exit") {
  TempDir base;
  std::filesystem::path first_path;
  {
    MultiprocessRunDir first(base.path() / "metrics");
    MultiprocessRunDir second(base.path() / "metrics");
    first_path = first.path();
    CHECK(first.path() != second.path());
    CHECK(first.path().parent_path() == base.path() / "metrics");
    struct stat info {};
    REQUIRE(::stat(first.path().c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    REQUIRE(::stat((base.path() / "metrics").c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    CHECK(std::filesystem::exists(first.path() / "owner"));
  }
  CHECK_FALSE(std::filesystem::exists(first_path));
}

TEST_CASE("a stale directory from a crashed run is removed, not merged into a new one") {
  TempDir base;
  const auto stale = base.path() / "run-crashed";
  write_owner(stale, dead_pid());
  const auto live = base.path() / "run-live";
  write_owner(live, dead_pid());
  const OwnerLock live_launcher(live);

  MultiprocessRunDir run(base.path());
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(live / "producer_1.db"));  // another launcher still runs
  CHECK(run.path() != stale);
  CHECK(std::distance(std::filesystem::directory_iterator(run.path()), {}) == 1);
}

TEST_CASE("the live launcher holds its owner file locked, and the file says who it is") {
  TempDir base;
  MultiprocessRunDir run(base.path());
  CHECK(owner_locked(run.path()));
  std::ifstream owner(run.path() / "owner");
  long long pid = 0;
  unsigned long long start = 0;
  std::string marker;
  std::string host;
  REQUIRE(owner >> pid >> start >> marker >> host);
  CHECK(pid == ::getpid());
  CHECK(start == current_process_instance().start_time);
  CHECK(marker == "flock");
  CHECK_FALSE(host.empty());
  CHECK_FALSE(std::filesystem::exists(run.path() / "owner.new"));
}

TEST_CASE("a run directory whose owner lock a live process holds is kept, whatever pid it names") {
  // A launcher in another PID namespace: the pid in its owner file is dead
  // (or another process) here, yet it runs and holds the lock.
  TempDir base;
  const auto other_namespace = base.path() / "run-elsewhere";
  write_owner(other_namespace, dead_pid());
  const auto pid_one = base.path() / "run-pid-one";
  write_owner(pid_one, 1);
  const OwnerLock first(other_namespace);
  const OwnerLock second(pid_one);
  make_older_than_ten_minutes(other_namespace);

  CHECK(MultiprocessRunDir::remove_stale(base.path()) == 0);
  CHECK(std::filesystem::exists(other_namespace / "producer_1.db"));
  CHECK(std::filesystem::exists(pid_one / "producer_1.db"));
}

TEST_CASE("a run directory whose owner file nobody locks is removed, whatever pid it names") {
  // The pid may be alive here (this very process) and still not be the
  // launcher: only the lock counts.
  TempDir base;
  const auto unlocked = base.path() / "run-unlocked";
  write_owner(unlocked, ::getpid());
  CHECK(MultiprocessRunDir::remove_stale(base.path()) == 1);
  CHECK_FALSE(std::filesystem::exists(unlocked));
}

TEST_CASE("a run directory without a locking owner file is kept for ten minutes, then removed") {
  // No owner file yet (a launcher between mkdtemp and its owner file, or one
  // that crashed there) or one of the format before the lock.
  TempDir base;
  const auto no_owner = base.path() / "run-no-owner";
  std::filesystem::create_directory(no_owner);
  const auto old_format = base.path() / "run-old-format";
  std::filesystem::create_directory(old_format);
  std::ofstream(old_format / "owner") << dead_pid() << " 0\n";
  const auto fifo = base.path() / "run-fifo-owner";
  std::filesystem::create_directory(fifo);
  REQUIRE(::mkfifo((fifo / "owner").c_str(), 0600) == 0);  // never blocks the cleanup

  CHECK(MultiprocessRunDir::remove_stale(base.path()) == 0);
  CHECK(std::filesystem::exists(no_owner));
  CHECK(std::filesystem::exists(old_format));
  CHECK(std::filesystem::exists(fifo));

  for (const auto& dir : {no_owner, old_format, fifo}) make_older_than_ten_minutes(dir);
  CHECK(MultiprocessRunDir::remove_stale(base.path()) == 3);
  CHECK_FALSE(std::filesystem::exists(no_owner));
  CHECK_FALSE(std::filesystem::exists(old_format));
  CHECK_FALSE(std::filesystem::exists(fifo));
}

TEST_CASE("the owner lock is not inherited by programs the launcher starts (close-on-exec)") {
  TempDir base;
  MultiprocessRunDir run(base.path());
  const std::filesystem::path owner = std::filesystem::canonical(run.path() / "owner");
  int found = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    if (std::filesystem::read_symlink(entry.path(), ec) != owner) continue;
    const int fd = std::stoi(entry.path().filename().string());
    CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    ++found;
  }
  CHECK(found == 1);
}

TEST_CASE("a reused pid with another start time counts as dead") {
  ProcessInstance self = current_process_instance();
  CHECK(process_alive(self));
  REQUIRE(self.start_time != 0);
  CHECK_FALSE(process_alive(ProcessInstance{self.pid, self.start_time + 1}));
  CHECK_FALSE(process_alive(ProcessInstance{dead_pid(), 0}));
}

TEST_CASE("a forked child never removes the launcher's directory") {
  TempDir base;
  MultiprocessRunDir run(base.path());
  const pid_t child = ::fork();
  if (child == 0) {
    run.remove();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(std::filesystem::exists(run.path()));
  CHECK(owner_locked(run.path()));  // nor releases its lock
}

TEST_CASE("removing the directory also lets go of its owner file") {
  TempDir base;
  MultiprocessRunDir run(base.path());
  const std::string prefix = run.path().string() + "/";
  run.remove();
  CHECK_FALSE(std::filesystem::exists(run.path()));
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(entry.path(), ec).string();
    CHECK(target.rfind(prefix, 0) != 0);
  }
}

TEST_CASE("a base directory of another kind is a startup error naming the flag") {
  TempDir base;
  std::ofstream(base.path() / "file") << "x";
  try {
    MultiprocessRunDir run(base.path() / "file");
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "--metrics-multiproc-dir");
  }
}
