// signal_names.cpp — a table of the Linux signal numbers (no strsignal: it
// is neither async-signal-safe nor locale-free).
#include "core/signal_names.hpp"

#include <csignal>

namespace tokenspeed::metrics {
namespace {

struct SignalText {
  int number;
  const char* name;
  const char* meaning;
};

constexpr SignalText kSignals[] = {
    {SIGHUP, "SIGHUP", ""},
    {SIGINT, "SIGINT", ""},
    {SIGQUIT, "SIGQUIT", ""},
    {SIGILL, "SIGILL", "illegal instruction"},
    {SIGTRAP, "SIGTRAP", "trace trap"},
    {SIGABRT, "SIGABRT", "aborted"},
    {SIGBUS, "SIGBUS", "bus error"},
    {SIGFPE, "SIGFPE", "arithmetic exception"},
    {SIGKILL, "SIGKILL", "killed"},
    {SIGUSR1, "SIGUSR1", ""},
    {SIGSEGV, "SIGSEGV", "segmentation fault"},
    {SIGUSR2, "SIGUSR2", ""},
    {SIGPIPE, "SIGPIPE", ""},
    {SIGALRM, "SIGALRM", ""},
    {SIGTERM, "SIGTERM", "terminated"},
    {SIGCHLD, "SIGCHLD", ""},
    {SIGCONT, "SIGCONT", ""},
    {SIGSTOP, "SIGSTOP", ""},
    {SIGTSTP, "SIGTSTP", ""},
    {SIGTTIN, "SIGTTIN", ""},
    {SIGTTOU, "SIGTTOU", ""},
    {SIGURG, "SIGURG", ""},
    {SIGXCPU, "SIGXCPU", "CPU time limit exceeded"},
    {SIGXFSZ, "SIGXFSZ", "file size limit exceeded"},
    {SIGVTALRM, "SIGVTALRM", ""},
    {SIGPROF, "SIGPROF", ""},
    {SIGWINCH, "SIGWINCH", ""},
    {SIGIO, "SIGIO", ""},
    {SIGPWR, "SIGPWR", ""},
    {SIGSYS, "SIGSYS", "bad system call"},
};

const SignalText* find(int signal) noexcept {
  for (const SignalText& entry : kSignals) {
    if (entry.number == signal) return &entry;
  }
  return nullptr;
}

}  // namespace

const char* signal_name(int signal) noexcept {
  const SignalText* entry = find(signal);
  return entry != nullptr ? entry->name : nullptr;
}

const char* signal_meaning(int signal) noexcept {
  const SignalText* entry = find(signal);
  return entry != nullptr ? entry->meaning : "";
}

}  // namespace tokenspeed::metrics
