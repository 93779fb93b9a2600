// fatal_signal_handler.cpp — sigaction with SA_RESETHAND, formatting into a
// stack buffer with nothing but memcpy-like loops, one write(2), re-raise.
// Nothing here allocates, locks or touches stdio inside the handler.
#include "process/fatal_signal_handler.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "core/plugin_call_context.hpp"
#include "core/signal_names.hpp"

namespace tokenspeed::metrics {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS, SIGTRAP};

// The process name, written at startup and read by the handler.
char g_process_name[64] = "tokenspeed-metrics";
std::atomic<bool> g_installed{false};

// Appends to a fixed buffer; truncates silently.
struct LineBuffer {
  char* out;
  std::size_t size;
  std::size_t length = 0;
  void text(const char* s) noexcept {
    while (s != nullptr && *s != '\0' && length < size) out[length++] = *s++;
  }
  void number(long value) noexcept {
    char digits[24];
    int n = 0;
    unsigned long v =
        value < 0 ? 0UL - static_cast<unsigned long>(value) : static_cast<unsigned long>(value);
    do {
      digits[n++] = static_cast<char>('0' + v % 10);
      v /= 10;
    } while (v != 0 && n < 24);
    if (value < 0 && length < size) out[length++] = '-';
    while (n > 0 && length < size) out[length++] = digits[--n];
  }
};

void on_fatal_signal(int signal, siginfo_t* /*info*/, void* /*context*/) {
  const int saved_errno = errno;
  char line[1024];
  const std::size_t length = format_fatal_signal_line(signal, line, sizeof line - 1);
  line[length] = '\n';
  const char* p = line;
  std::size_t left = length + 1;
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  errno = saved_errno;
  // SA_RESETHAND restored the default action. The signal is blocked while
  // this handler runs, so it is delivered (and kills the process, with a
  // core dump where enabled) as soon as the handler returns; a hardware
  // fault would also recur on return.
  ::raise(signal);
}

}  // namespace

std::size_t format_fatal_signal_line(int signal, char* out, std::size_t size) noexcept {
  LineBuffer line{out, size};
  line.text("tokenspeed-metrics: fatal: ");
  line.text(g_process_name);
  line.text(" (pid ");
  line.number(static_cast<long>(::getpid()));
  line.text("): ");
  if (const char* name = signal_name(signal); name != nullptr) {
    line.text(name);
  } else {
    line.text("signal ");
    line.number(signal);
  }
  if (const char* meaning = signal_meaning(signal); meaning[0] != '\0') {
    line.text(" (");
    line.text(meaning);
    line.text(")");
  }
  if (const char* call = current_plugin_call(); call != nullptr) {
    line.text(" in ");
    line.text(call);
    line.text("; a plugin's crash is the process's crash");
  } else {
    line.text(" outside plugin code");
  }
  return line.length;
}

void install_fatal_signal_handler(std::string_view process_name) noexcept {
  const std::size_t n = std::min(process_name.size(), sizeof g_process_name - 1);
  std::memcpy(g_process_name, process_name.data(), n);
  g_process_name[n] = '\0';
  if (g_installed.exchange(true)) return;
  struct sigaction action {};
  action.sa_sigaction = &on_fatal_signal;
  action.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (const int signal : kFatalSignals) ::sigaction(signal, &action, nullptr);
}

}  // namespace tokenspeed::metrics
