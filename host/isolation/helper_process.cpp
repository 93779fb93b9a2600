// helper_process.cpp — locating and spawning the sink helper, and the set of
// helpers this process started and has not reaped yet. Never calls a plugin.
#include "isolation/helper_process.hpp"

#include <signal.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/host_image.hpp"
#include "core/signal_names.hpp"
#include "core/thread_safety.hpp"

#ifndef TSM_HELPER_FROM_LIBDIR
#define TSM_HELPER_FROM_LIBDIR "../libexec/tokenspeed-metrics"
#endif

extern char** environ;

namespace tokenspeed::metrics::isolation {
namespace {

bool executable(const std::filesystem::path& path) {
  return !path.empty() && ::access(path.c_str(), X_OK) == 0;
}

// The helpers started here and not yet reaped by their supervisors. The
// mutex is held across posix_spawn and the insertion, and by
// reap_unless_own_helper across its check and waitpid.
Mutex own_helpers_mutex;
std::vector<pid_t> own_helpers TSM_GUARDED_BY(own_helpers_mutex);

}  // namespace

std::string helper_executable() {
  if (const char* set = std::getenv(kHelperPathEnv); set != nullptr && *set != '\0') {
    return executable(set) ? std::string(set) : std::string();
  }
  const std::filesystem::path dir = host_image_directory();
  if (dir.empty()) return {};
  for (const std::filesystem::path& candidate :
       {dir / TSM_HELPER_FROM_LIBDIR / kHelperFileName, dir / kHelperFileName}) {
    if (executable(candidate)) return candidate.lexically_normal().string();
  }
  return {};
}

pid_t spawn_helper(const HelperLaunch& launch, std::string& error) noexcept {
  try {
    if (launch.executable.empty()) {
      error = std::string("the sink helper '") + kHelperFileName +
              "' was not found (installed in libexec next to the library, or named by " +
              kHelperPathEnv + ")";
      return -1;
    }
    const std::string parent = std::to_string(::getpid());
    std::vector<std::string> args = {
        launch.executable, "--plugin", launch.plugin_path, "--reporter", launch.reporter,
        "--channel-fd",    "3",        "--parent-pid",     parent};
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    // dup2 onto 3 clears close-on-exec; a descriptor already at 3 is moved
    // away first, so that the dup2 is never a no-op.
    int fd = launch.channel_fd;
    int moved = -1;
    if (fd == 3) {
      moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 4);
      fd = moved;
    }
    posix_spawn_file_actions_adddup2(&actions, fd, 3);
    posix_spawn_file_actions_addclosefrom_np(&actions, 4);
    // The starting thread's blocked signals and ignored ones are not the
    // helper's: it starts with every signal unblocked and at its default.
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t none;
    sigemptyset(&none);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (const int number :
         {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2}) {
      sigaddset(&defaults, number);
    }
    posix_spawnattr_setsigmask(&attributes, &none);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    MutexLock own(own_helpers_mutex);
    own_helpers.reserve(own_helpers.size() + 1);  // the insertion below cannot throw
    const int rc =
        ::posix_spawn(&pid, launch.executable.c_str(), &actions, &attributes, argv.data(), environ);
    if (rc == 0) own_helpers.push_back(pid);
    own.unlock();
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    if (moved >= 0) ::close(moved);
    if (rc != 0) {
      error = "cannot start the sink helper '" + launch.executable + "': " + std::strerror(rc);
      return -1;
    }
    return pid;
  } catch (...) {
    error = "cannot start the sink helper: out of memory";
    return -1;
  }
}

void helper_reaped(pid_t pid) noexcept {
  MutexLock own(own_helpers_mutex);
  own_helpers.erase(std::remove(own_helpers.begin(), own_helpers.end(), pid), own_helpers.end());
}

bool reap_unless_own_helper(pid_t pid) noexcept {
  MutexLock own(own_helpers_mutex);
  if (std::find(own_helpers.begin(), own_helpers.end(), pid) != own_helpers.end()) return false;
  int status = 0;
  return ::waitpid(pid, &status, WNOHANG) == pid;
}

std::string describe_wait_status(int status) {
  if (WIFSIGNALED(status)) {
    const int number = WTERMSIG(status);
    const char* name = signal_name(number);
    const char* meaning = signal_meaning(number);
    std::string text =
        "killed by " + (name != nullptr ? std::string(name) : "signal " + std::to_string(number));
    if (meaning != nullptr && *meaning != '\0') text += std::string(" (") + meaning + ")";
    return text;
  }
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended (wait status " + std::to_string(status) + ")";
}

}  // namespace tokenspeed::metrics::isolation
