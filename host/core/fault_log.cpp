// fault_log.cpp — c_complain-style rate limiting of fault lines.
#include "core/fault_log.hpp"

#include <unistd.h>

#include <string>

namespace tokenspeed::metrics {

void write_log_line_to_stderr(std::string_view line) noexcept {
  try {
    std::string out(line);
    out.push_back('\n');
    const char* p = out.data();
    std::size_t left = out.size();
    while (left > 0) {
      const ssize_t n = ::write(STDERR_FILENO, p, left);
      if (n <= 0) return;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
  } catch (...) {
    // Out of memory: the line is lost.
  }
}

FaultLog::FaultLog(std::string subject, std::chrono::nanoseconds interval, LogWriter writer)
    : subject_(std::move(subject)), interval_(interval), writer_(std::move(writer)) {
  if (!writer_) writer_ = &write_log_line_to_stderr;
}

bool FaultLog::due(Clock::time_point now) const noexcept {
  return !written_once_ || now - last_line_ >= interval_;
}

void FaultLog::report(std::string_view what, std::uint64_t count, Clock::time_point now) {
  if (count == 0) return;
  bool found = false;
  for (Pending& p : pending_) {
    if (p.what == what) {
      p.count += count;
      found = true;
      break;
    }
  }
  if (!found) pending_.push_back(Pending{std::string(what), count});
  if (due(now)) write_pending(now);
}

void FaultLog::message(std::string_view text, Clock::time_point now) {
  if (!due(now)) {
    ++suppressed_messages_;
    return;
  }
  std::string line = "tokenspeed-metrics: " + subject_ + ": " + std::string(text);
  writer_(line);
  written_once_ = true;
  last_line_ = now;
  if (!pending_.empty()) write_pending(now);  // counts ride along once
}

void FaultLog::flush(Clock::time_point now) {
  if (!pending_.empty() || suppressed_messages_ > 0) write_pending(now);
}

void FaultLog::write_pending(Clock::time_point now) {
  std::string line = "tokenspeed-metrics: " + subject_ + ":";
  const char* sep = " ";
  for (const Pending& p : pending_) {
    line += sep;
    line += std::to_string(p.count);
    line += ' ';
    line += p.what;
    sep = "; ";
  }
  if (suppressed_messages_ > 0) {
    line += sep;
    line += std::to_string(suppressed_messages_) + " further messages suppressed";
  }
  if (written_once_) line += " (since the last report)";
  pending_.clear();
  suppressed_messages_ = 0;
  writer_(line);
  written_once_ = true;
  last_line_ = now;
}

}  // namespace tokenspeed::metrics
