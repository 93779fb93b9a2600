// multiprocess_run_dir_test.cpp — the per-run directory: fresh, private,
// removed on normal exit, stale runs of dead launchers removed, never reused.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prometheus/multiprocess_run_dir.hpp"
#include "config/startup_error.hpp"

using namespace tokenspeed::metrics;

namespace {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string templ = (std::filesystem::temp_directory_path() / "tsm-rundir-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    path = templ;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

}  // namespace

TEST_CASE("each run gets a fresh private (0700) directory that is removed on normal exit") {
  TempDir base;
  std::filesystem::path first_path;
  {
    MultiprocessRunDir first(base.path / "metrics");
    MultiprocessRunDir second(base.path / "metrics");
    first_path = first.path();
    CHECK(first.path() != second.path());
    CHECK(first.path().parent_path() == base.path / "metrics");
    struct stat info {};
    REQUIRE(::stat(first.path().c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    REQUIRE(::stat((base.path / "metrics").c_str(), &info) == 0);
    CHECK((info.st_mode & 0777) == 0700);
    CHECK(std::filesystem::exists(first.path() / "owner"));
  }
  CHECK_FALSE(std::filesystem::exists(first_path));
}

TEST_CASE("a stale directory from a crashed run is removed, not merged into a new one") {
  TempDir base;
  const auto stale = base.path / "run-crashed";
  std::filesystem::create_directory(stale);
  std::ofstream(stale / "owner") << dead_pid() << " 0\n";
  std::ofstream(stale / "producer_1.db") << "old";
  const auto live = base.path / "run-live";
  std::filesystem::create_directory(live);
  std::ofstream(live / "owner") << ::getpid() << " " << current_process_identity().start_time
                                << "\n";

  MultiprocessRunDir run(base.path);
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(live));  // another launcher still runs
  CHECK(run.path() != stale);
  CHECK(std::distance(std::filesystem::directory_iterator(run.path()), {}) == 1);
}

TEST_CASE("a reused pid with another start time counts as dead") {
  ProcessIdentity self = current_process_identity();
  CHECK(process_alive(self));
  REQUIRE(self.start_time != 0);
  CHECK_FALSE(process_alive(ProcessIdentity{self.pid, self.start_time + 1}));
  CHECK_FALSE(process_alive(ProcessIdentity{dead_pid(), 0}));
}

TEST_CASE("a forked child never removes the launcher's directory") {
  TempDir base;
  MultiprocessRunDir run(base.path);
  const pid_t child = ::fork();
  if (child == 0) {
    run.remove();
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  CHECK(std::filesystem::exists(run.path()));
}

TEST_CASE("a base directory of another kind is a startup error naming the flag") {
  TempDir base;
  std::ofstream(base.path / "file") << "x";
  try {
    MultiprocessRunDir run(base.path / "file");
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "--metrics-multiproc-dir");
  }
}
