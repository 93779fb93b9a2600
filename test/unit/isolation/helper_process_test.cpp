// helper_process_test.cpp — the sink helper is found where the environment or
// the install puts it, started with the channel on descriptor 3 and the
// arguments it reads, left to its supervisor to reap, and its end described
// in the words of the summary.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "eventually.hpp"
#include "isolation/helper_process.hpp"
#include "temp_dir.hpp"

using namespace tokenspeed::metrics::isolation;
using tokenspeed::metrics::test::eventually;
using tokenspeed::metrics::test::TempDir;

namespace {

// Sets the helper's environment variable for a scope, then restores it.
class HelperPathOverride {
 public:
  explicit HelperPathOverride(const std::string& path) {
    if (const char* set = std::getenv(kHelperPathEnv)) saved_ = set;
    ::setenv(kHelperPathEnv, path.c_str(), 1);
  }
  ~HelperPathOverride() {
    if (saved_) {
      ::setenv(kHelperPathEnv, saved_->c_str(), 1);
    } else {
      ::unsetenv(kHelperPathEnv);
    }
  }
  HelperPathOverride(const HelperPathOverride&) = delete;
  HelperPathOverride& operator=(const HelperPathOverride&) = delete;

 private:
  std::optional<std::string> saved_;
};

// The wait status of a child that ends by calling end (async-signal-safe).
template <class End>
int status_of_child(End end) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    end();
    ::_exit(120);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return status;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("the environment names the helper when it is executable") {
  TempDir dir("tsm-helper-process");
  const std::string helper = dir.write("helper", "#!/bin/sh\n");
  ::chmod(helper.c_str(), 0700);
  const std::string plain = dir.write("plain", "not executable");
  {
    HelperPathOverride override(helper);
    CHECK(helper_executable() == helper);
  }
  {
    HelperPathOverride override(plain);
    CHECK(helper_executable().empty());
  }
}

TEST_CASE("the helper starts with its arguments and the channel on descriptor 3") {
  TempDir dir("tsm-helper-process");
  const std::string args_file = (dir.path() / "args").string();
  const std::string channel_file = (dir.path() / "channel").string();
  const std::string helper = dir.write(
      "helper", "#!/bin/sh\necho \"$@\" > '" + args_file + "'\ncat <&3 > '" + channel_file + "'\n");
  ::chmod(helper.c_str(), 0700);
  int channel[2];
  REQUIRE(::pipe2(channel, O_CLOEXEC) == 0);
  REQUIRE(::write(channel[1], "records", 7) == 7);
  ::close(channel[1]);

  std::string error;
  const pid_t pid = spawn_helper({helper, "/p/x.so", "x", channel[0]}, error);
  ::close(channel[0]);
  REQUIRE(pid > 0);
  // Its supervisor's to reap, even once it has ended.
  CHECK_FALSE(reap_unless_own_helper(pid));
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  helper_reaped(pid);
  CHECK(describe_wait_status(status) == "exited with status 0");
  CHECK(read_file(args_file) == "--plugin /p/x.so --reporter x --channel-fd 3 --parent-pid " +
                                    std::to_string(::getpid()) + "\n");
  CHECK(read_file(channel_file) == "records");
}

TEST_CASE("a helper that cannot be started says why") {
  std::string error;
  CHECK(spawn_helper({"", "/p/x.so", "x", 0}, error) == -1);
  CHECK(error.find("the sink helper 'tokenspeed-metrics-sink-helper' was not found") !=
        std::string::npos);
  CHECK(spawn_helper({"/nonexistent/helper", "/p/x.so", "x", 0}, error) == -1);
  CHECK(error == "cannot start the sink helper '/nonexistent/helper': No such file or directory");
}

TEST_CASE("a child that is not one of this process's helpers is reaped") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(0);
  CHECK(eventually([&] { return reap_unless_own_helper(pid); }));
  CHECK(::waitpid(pid, nullptr, WNOHANG) == -1);  // already reaped
}

TEST_CASE("a helper's end is described by its exit status or its signal") {
  CHECK(describe_wait_status(status_of_child([] { ::_exit(3); })) == "exited with status 3");
  CHECK(describe_wait_status(status_of_child([] { ::raise(SIGKILL); })) ==
        "killed by SIGKILL (killed)");
  CHECK(describe_wait_status(status_of_child([] { ::raise(SIGUSR1); })) == "killed by SIGUSR1");
  const int realtime = SIGRTMIN + 1;
  CHECK(describe_wait_status(status_of_child([realtime] { ::raise(realtime); })) ==
        "killed by signal " + std::to_string(realtime));
}
