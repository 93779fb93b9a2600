// fatal_signal_handler_test.cpp — a crash is named before the process dies:
// the process, the signal, and the output and plugin file whose code the
// crashing thread was running; the process still dies by that signal.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "core/plugin_call_context.hpp"
#include "process/fatal_signal_handler.hpp"

using namespace tokenspeed::metrics;

namespace {

constexpr const char* kEmitCall = "output 'x' (plugin file '/opt/p/crashes.so') during emit";

struct ChildResult {
  std::string stderr_text;
  int status = 0;
};

// Runs crash() in a child process whose stderr is a pipe, with the handler
// installed; returns what it wrote and how it ended.
template <class Crash>
ChildResult run_crashing_child(Crash crash) {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const rlimit no_core{0, 0};  // the crash is the point: no core file
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::signal(SIGSEGV, SIG_DFL);
    ::signal(SIGABRT, SIG_DFL);
    install_fatal_signal_handler("scheduler-7");
    crash();
    ::_exit(0);  // not reached
  }
  ::close(fds[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    result.stderr_text.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  ::waitpid(pid, &result.status, 0);
  return result;
}

// A real invalid write, hidden from UBSan's null check (which would report
// it before the signal under -fsanitize=undefined).
__attribute__((no_sanitize_undefined, noinline)) void write_through_null() {
  volatile int* volatile nowhere = nullptr;
  *nowhere = 1;
}

}  // namespace

TEST_CASE(
    "a segmentation fault inside a plugin call names the process, the signal, the output and the "
    "plugin file, then the process dies by that signal") {
  const ChildResult child = run_crashing_child([] {
    const PluginCallScope scope(kEmitCall);
    write_through_null();
  });
  REQUIRE(WIFSIGNALED(child.status));
  CHECK(WTERMSIG(child.status) == SIGSEGV);
  CHECK_THAT(child.stderr_text,
             Catch::Matches("tokenspeed-metrics: fatal: scheduler-7 \\(pid [0-9]+\\): SIGSEGV "
                            "\\(segmentation fault\\) in output 'x' \\(plugin file "
                            "'/opt/p/crashes.so'\\) during emit; a plugin's crash is the "
                            "process's crash\n"));
}

TEST_CASE("an abort outside plugin code is named as such, and the process dies by SIGABRT") {
  const ChildResult child = run_crashing_child([] { std::abort(); });
  REQUIRE(WIFSIGNALED(child.status));
  CHECK(WTERMSIG(child.status) == SIGABRT);
  CHECK_THAT(child.stderr_text,
             Catch::Matches("tokenspeed-metrics: fatal: scheduler-7 \\(pid [0-9]+\\): SIGABRT "
                            "\\(aborted\\) outside plugin code\n"));
}

TEST_CASE("the plugin call text is the calling thread's and is restored after the call") {
  CHECK(current_plugin_call() == nullptr);
  {
    const PluginCallScope outer(kEmitCall);
    CHECK(std::string(current_plugin_call()) == kEmitCall);
    {
      const PluginCallScope inner("output 'y' during close");
      CHECK(std::string(current_plugin_call()) == "output 'y' during close");
    }
    CHECK(std::string(current_plugin_call()) == kEmitCall);
    char line[512];
    const std::size_t n = format_fatal_signal_line(SIGBUS, line, sizeof line);
    CHECK_THAT(std::string(line, n), Catch::Contains(": SIGBUS (bus error) in output 'x'"));
  }
  CHECK(current_plugin_call() == nullptr);
}
