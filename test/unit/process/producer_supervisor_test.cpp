#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "eventually.hpp"
#include "process/producer_supervisor.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics;

namespace {

using tokenspeed::metrics::test::eventually;
using tokenspeed::metrics::test::TempDir;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int memfd_with(const std::string& text) {
  const int fd = ::memfd_create("handoff", 0);
  REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

ProducerSpec shell(const std::string& name, const std::string& script) {
  return {name, {"/bin/sh", "-c", script}};
}

void wait_until_exists(const std::filesystem::path& path) {
  REQUIRE(eventually([&] { return std::filesystem::exists(path); }));
}

// Polls reap() until a producer exited.
std::vector<ProducerProcess> wait_for_exit(ProducerSupervisor& supervisor) {
  std::vector<ProducerProcess> exited;
  REQUIRE(eventually([&] {
    exited = supervisor.reap();
    return !exited.empty();
  }));
  return exited;
}

}  // namespace

TEST_CASE(
    "a producer inherits the handoff as descriptor 3, named by the environment, and nothing else") {
  TempDir dir;
  const int handoff = memfd_with("{\"outputs\":[]}");
  int leaked[2];
  REQUIRE(::pipe(leaked) == 0);  // not close-on-exec: must not reach the child
  ProducerSupervisor supervisor;
  const auto out = dir.path() / "out";
  supervisor.spawn(
      shell("reader", "cat <&3 > " + out.string() +
                          "; echo \" $TOKENSPEED_METRICS_HANDOFF_FD\" >> " + out.string() +
                          "; ls /proc/self/fd > " + (dir.path() / "fds").string()),
      handoff);
  ::close(handoff);
  wait_for_exit(supervisor);
  ::close(leaked[0]);
  ::close(leaked[1]);
  CHECK(read_file(out) == "{\"outputs\":[]} 3\n");
  std::istringstream fds(read_file(dir.path() / "fds"));
  for (std::string fd; fds >> fd;) {
    // 0-2, 3 (the handoff) and the descriptor ls itself opens.
    CHECK(std::stoi(fd) <= 4);
  }
}

TEST_CASE("stop asks producers with SIGTERM and reaps them") {
  TempDir dir;
  const int handoff = memfd_with("{}");
  ProducerSupervisor supervisor;
  const auto ready = dir.path() / "ready";
  supervisor.spawn(shell("polite", "touch " + ready.string() + "; exec sleep 30"), handoff);
  ::close(handoff);
  wait_until_exists(ready);
  const auto& processes =
      supervisor.stop(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  REQUIRE(processes.size() == 1);
  CHECK_FALSE(processes[0].running);
  CHECK_FALSE(processes[0].killed);
  CHECK(processes[0].exit_status == 128 + SIGTERM);
}

TEST_CASE("a producer that does not exit by the deadline is killed") {
  TempDir dir;
  const int handoff = memfd_with("{}");
  ProducerSupervisor supervisor;
  const auto ready = dir.path() / "ready";
  supervisor.spawn(
      shell("stubborn", "trap '' TERM; touch " + ready.string() + "; while :; do sleep 1; done"),
      handoff);
  ::close(handoff);
  wait_until_exists(ready);
  const auto& processes =
      supervisor.stop(std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
  REQUIRE(processes.size() == 1);
  CHECK(processes[0].killed);
  CHECK(processes[0].exit_status == 128 + SIGKILL);
  CHECK(supervisor.running_count() == 0);
}

TEST_CASE("reap reports a producer that exited on its own, once") {
  const int handoff = memfd_with("{}");
  ProducerSupervisor supervisor;
  supervisor.spawn(shell("short", "exit 7"), handoff);
  ::close(handoff);
  const std::vector<ProducerProcess> exited = wait_for_exit(supervisor);
  REQUIRE(exited.size() == 1);
  CHECK(exited[0].name == "short");
  CHECK(exited[0].exit_status == 7);
  CHECK(supervisor.reap().empty());
}

TEST_CASE("a producer that cannot be started is an error naming it") {
  const int handoff = memfd_with("{}");
  ProducerSupervisor supervisor;
  CHECK_THROWS_WITH(supervisor.spawn({"ghost", {"/nonexistent/producer"}}, handoff),
                    Catch::Contains("ghost"));
  ::close(handoff);
}
