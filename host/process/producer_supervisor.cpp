// producer_supervisor.cpp — posix_spawn with a closed descriptor table,
// polling waitpid for exits, SIGTERM then SIGKILL at the deadline.
#include "process/producer_supervisor.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <thread>

#include "process/producer_handoff.hpp"

extern char** environ;

namespace tokenspeed::metrics {
namespace {

constexpr int kHandoffChildFd = 3;

int status_code(int status) noexcept {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  const std::string prefix = std::string(kHandoffFdEnv) + "=";
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    if (std::string_view(*entry).substr(0, prefix.size()) != prefix) env.emplace_back(*entry);
  }
  env.push_back(prefix + std::to_string(kHandoffChildFd));
  return env;
}

}  // namespace

ProducerSupervisor::~ProducerSupervisor() { stop(std::chrono::steady_clock::now()); }

void ProducerSupervisor::spawn(const ProducerSpec& spec, int handoff_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  // The handoff becomes descriptor 3; nothing else of the launcher (its
  // listening socket, its metric file) leaks into the producer.
  posix_spawn_file_actions_adddup2(&actions, handoff_fd, kHandoffChildFd);
  posix_spawn_file_actions_addclosefrom_np(&actions, kHandoffChildFd + 1);
  sigset_t empty;
  sigset_t defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGCHLD);
  posix_spawnattr_setsigmask(&attributes, &empty);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env = child_environment();
  std::vector<char*> argv;
  for (const std::string& arg : spec.argv) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& entry : env) envp.push_back(entry.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  const int error = ::posix_spawn(&pid, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (error != 0) {
    throw std::system_error(error, std::generic_category(),
                            "cannot start producer '" + spec.name + "' (" + spec.argv[0] + ")");
  }
  ProducerProcess process;
  process.name = spec.name;
  process.pid = pid;
  process.running = true;
  processes_.push_back(std::move(process));
}

void ProducerSupervisor::record_exit(ProducerProcess& process, int status) noexcept {
  process.running = false;
  process.exit_status = status_code(status);
  process.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (!exit_observer_) return;
  try {
    exit_observer_(process);
  } catch (...) {
    // The observer's own failure (noexcept reap path): the exit is still recorded and returned.
  }
}

std::vector<ProducerProcess> ProducerSupervisor::reap() noexcept {
  std::vector<ProducerProcess> exited;
  for (ProducerProcess& process : processes_) {
    if (!process.running) continue;
    int status = 0;
    const pid_t result = ::waitpid(process.pid, &status, WNOHANG);
    if (result == process.pid) {
      record_exit(process, status);
      try {
        exited.push_back(process);
      } catch (...) {
        // No memory to return it: the exit is still recorded in processes().
      }
    } else if (result < 0 && errno == ECHILD) {
      process.running = false;  // reaped elsewhere
    }
  }
  return exited;
}

std::size_t ProducerSupervisor::running_count() const noexcept {
  std::size_t count = 0;
  for (const ProducerProcess& process : processes_) count += process.running ? 1 : 0;
  return count;
}

const std::vector<ProducerProcess>& ProducerSupervisor::stop(
    std::chrono::steady_clock::time_point deadline) noexcept {
  reap();
  for (ProducerProcess& process : processes_) {
    if (!process.running) continue;
    process.stop_requested = true;
    ::kill(process.pid, SIGTERM);
  }
  // Poll: a few milliseconds of latency is nothing against a shutdown budget,
  // and it needs no SIGCHLD handler in a process that embeds us.
  while (running_count() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    reap();
  }
  for (ProducerProcess& process : processes_) {
    if (!process.running) continue;
    ::kill(process.pid, SIGKILL);
    process.killed = true;
    int status = 0;
    while (::waitpid(process.pid, &status, 0) < 0 && errno == EINTR) {
    }
    record_exit(process, status);
  }
  return processes_;
}

}  // namespace tokenspeed::metrics
