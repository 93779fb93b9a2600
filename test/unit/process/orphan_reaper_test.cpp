// orphan_reaper_test.cpp — what a PID-1 launcher reaps: ended children that
// are nobody's here, after one call's grace; never a producer it supervises
// nor a sink helper this process started. Real child processes.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

#include "eventually.hpp"
#include "isolation/helper_process.hpp"
#include "process/orphan_reaper.hpp"

using namespace tokenspeed::metrics;
using test::eventually;

extern char** environ;

namespace {

// A child that exits at once with status code.
pid_t spawn_exit(int code) {
  const std::string script = "exit " + std::to_string(code);
  const char* argv[] = {"/bin/sh", "-c", script.c_str(), nullptr};
  pid_t pid = -1;
  REQUIRE(::posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv),
                        environ) == 0);
  return pid;
}

// True when pid has ended and is still waitable (a zombie), left so.
bool ended_and_waitable(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
         info.si_pid == pid;
}

// Waits (bounded) until pid has ended, without reaping it.
void wait_ended(pid_t pid) {
  REQUIRE(eventually([&] { return ended_and_waitable(pid); }));
}

bool reaped(pid_t pid) {
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) < 0 && errno == ECHILD;
}

}  // namespace

TEST_CASE("an ended child nobody here owns is reaped at the reaper's next call, not at once",
          "[orphan_reaper]") {
  OrphanReaper reaper([](pid_t) { return false; });
  const pid_t orphan = spawn_exit(0);
  wait_ended(orphan);
  reaper.reap();
  CHECK(ended_and_waitable(orphan));  // the grace: a plugin's own waitpid comes first
  for (int call = 0; call < 10 && !reaped(orphan); ++call) reaper.reap();
  CHECK(reaped(orphan));
}

TEST_CASE("the reaper never takes the exit status of a producer it is told about",
          "[orphan_reaper]") {
  const pid_t producer = spawn_exit(3);
  OrphanReaper reaper([producer](pid_t pid) { return pid == producer; });
  wait_ended(producer);
  for (int call = 0; call < 5; ++call) reaper.reap();
  int status = 0;
  REQUIRE(::waitpid(producer, &status, WNOHANG) == producer);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
}

TEST_CASE("the reaper never takes the exit status of a sink helper this process started",
          "[orphan_reaper]") {
  const int channel = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  REQUIRE(channel >= 0);
  std::string error;
  // /bin/true ignores the helper's arguments and exits 0 at once.
  const pid_t helper = isolation::spawn_helper({"/bin/true", "plugin.so", "out", channel}, error);
  ::close(channel);
  REQUIRE(helper > 0);
  OrphanReaper reaper([](pid_t) { return false; });
  wait_ended(helper);
  for (int call = 0; call < 5; ++call) reaper.reap();
  int status = 0;
  REQUIRE(::waitpid(helper, &status, WNOHANG) == helper);
  CHECK(WIFEXITED(status));
  isolation::helper_reaped(helper);
}
