// jsonl_sink.cpp — the pending buffer, the writer thread and the file of one
// jsonl sink. emit only copies under a short lock; all disk I/O and JSON
// formatting happen on the writer thread.
#include "jsonl_sink.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <tokenspeed/kit/background_thread.hpp>
#include <tokenspeed/kit/delivery_figures.hpp>

#include "jsonl_record.hpp"

namespace tokenspeed::metrics::jsonl {

using Clock = std::chrono::steady_clock;

// Everything the sink and its writer thread share. The writer holds its own
// reference, so an abandoned writer (close timed out) can finish safely.
struct JsonlSink::State {
  State(SinkOptions o, const plugin::Host& h) : options(std::move(o)), host(h), account(h) {}
  ~State() {
    if (fd >= 0) ::close(fd);
  }

  const SinkOptions options;
  const plugin::Host host;
  int fd = -1;  // writer thread only, until writer_done

  std::mutex mutex;                    // guards everything below
  std::condition_variable wake;        // the writer waits on it
  std::condition_variable finished;    // close waits on it for writer_done
  std::vector<std::string> pending;    // chunks of records not yet taken by the writer
  std::size_t pending_bytes = 0;       // record bytes in pending
  std::size_t in_flight = 0;           // record bytes the writer is writing
  std::vector<std::string> spare;      // emptied chunks given back by the writer
  Clock::time_point first_pending_at;  // when pending became non-empty
  bool writer_idle = false;            // waiting for the first pending record
  bool stopping = false;               // close began: write everything, exit
  std::atomic<bool> abandon{false};    // close timed out: stop writing, exit
  bool writer_done = false;
  bool failed = false;  // a write failed; failure names the file
  std::string failure;
  uint64_t dropped_unlogged = 0;  // drops not yet reported in the log
  uint64_t dropped_total = 0;
  Clock::time_point last_drop_log;
  // The delivery figures: sent when its complete line is in the file,
  // refused over max_pending_bytes, lost when a write failed (a partial
  // last line is cut off the file) or close timed out. Changed
  // and reported under the mutex, and never once close gave up the writer.
  kit::DeliveryAccount account;
  uint64_t pending_events = 0;    // events in pending
  uint64_t in_flight_events = 0;  // events the writer is writing
};

namespace {

constexpr std::size_t kWriteChunk = std::size_t{256} * 1024;  // formatted text per write(2)
// Records are appended to chunks of this capacity, never moved once written;
// the writer hands emptied chunks back, so a busy sink stops allocating.
constexpr std::size_t kRecordChunk = std::size_t{64} * 1024;

std::string describe_errno(const std::string& what, const std::string& path, int error) {
  return what + " " + path + ": " + std::generic_category().message(error);
}

// Writes all of data; returns an empty string or a message naming the file.
// written: the bytes of data that reached the file, also on an error.
std::string write_all(int fd, std::string_view data, const std::string& path,
                      std::size_t& written) {
  written = 0;
  while (written < data.size()) {
    const ssize_t n = ::write(fd, data.data() + written, data.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return describe_errno("cannot write", path, errno);
    }
    written += static_cast<std::size_t>(n);
  }
  return {};
}

// After a failed write that left the first `torn` bytes of a line at the
// end of the file: cuts the file back to its last complete line, so the
// file never ends in half a record. Only a regular file whose end is still
// where this write left it (no other writer appended since) is cut; a FIFO
// or a device cannot be. Returns "" or why the partial line stayed.
std::string remove_torn_line(int fd, std::size_t torn, const std::string& path) {
  if (torn == 0) return {};
  struct stat file {};
  if (::fstat(fd, &file) != 0 || !S_ISREG(file.st_mode)) return {};
  const off_t end = ::lseek(fd, 0, SEEK_CUR);
  if (end < 0) return describe_errno("cannot find the end of", path, errno);
  if (file.st_size != end || static_cast<std::size_t>(end) < torn) {
    return "cannot remove the partial last line of " + path + ": another writer changed its end";
  }
  const off_t good = end - static_cast<off_t>(torn);
  while (::ftruncate(fd, good) != 0) {
    if (errno != EINTR)
      return describe_errno("cannot remove the partial last line of", path, errno);
  }
  ::lseek(fd, good, SEEK_SET);  // without O_APPEND, a later write starts there
  return {};
}

// What one batch came to: its error ("" when every line was written) and
// how many of its lines (one per event) are complete in the file.
struct BatchResult {
  std::string error;
  uint64_t lines_written = 0;
};

// Writes text, a whole number of lines, and adds the lines that reached the
// file complete to result. On an error the partial last line is removed.
void write_lines(JsonlSink::State& state, std::string_view text, uint64_t lines,
                 BatchResult& result) {
  std::size_t written = 0;
  std::string error = write_all(state.fd, text, state.options.path, written);
  if (error.empty()) {
    result.lines_written += lines;
    return;
  }
  const std::string_view reached = text.substr(0, written);
  result.lines_written += static_cast<uint64_t>(std::count(reached.begin(), reached.end(), '\n'));
  const std::size_t last_newline = reached.rfind('\n');
  const std::size_t torn =
      last_newline == std::string_view::npos ? written : written - last_newline - 1;
  const std::string cut = remove_torn_line(state.fd, torn, state.options.path);
  if (!cut.empty()) error += "; " + cut;
  result.error = std::move(error);
}

// Formats the records of the chunks as JSON lines and writes them, stopping
// at the first error. result counts the lines written also when formatting
// throws midway.
void write_batch(JsonlSink::State& state, const std::vector<std::string>& batch, std::string& text,
                 BatchResult& result) {
  text.clear();
  uint64_t lines = 0;  // in text
  for (const std::string& chunk : batch) {
    std::size_t offset = 0;
    while (offset < chunk.size()) {
      offset = append_json_line(text, chunk, offset);
      ++lines;
      if (text.size() < kWriteChunk) continue;
      if (state.abandon.load(std::memory_order_relaxed)) return;
      write_lines(state, text, lines, result);
      if (!result.error.empty()) return;
      text.clear();
      lines = 0;
    }
  }
  if (text.empty() || state.abandon.load(std::memory_order_relaxed)) return;
  write_lines(state, text, lines, result);
}

// Reports the figures, pending included. The caller holds the mutex.
void report_figures(JsonlSink::State& s) {
  plugin::DeliveryFigures& figures = s.account.figures();
  figures.refused = s.dropped_total;
  figures.pending = s.pending_events + s.in_flight_events;
  s.account.report();
}

// The writer thread: waits for the first pending record, then for the flush
// interval to pass since it arrived, for the buffer to fill, or for close;
// takes the whole pending buffer and writes it without holding the lock.
void run_writer(const std::shared_ptr<JsonlSink::State>& shared) {
  JsonlSink::State& s = *shared;
  std::vector<std::string> batch;
  std::string text;
  const std::size_t max_spare = s.options.buffer_bytes / kRecordChunk + 2;
  std::unique_lock lock(s.mutex);
  for (;;) {
    if (s.pending_bytes == 0) {
      if (s.stopping) break;
      s.writer_idle = true;
      // A timed wait without end rather than wait(): GCC 12's
      // condition_variable::wait binds GLIBCXX_3.4.30, above the build
      // baseline (plugins/symbol-versions.txt); a steady-clock wait_until
      // is inline code over the C library.
      s.wake.wait_until(lock, std::chrono::steady_clock::time_point::max(),
                        [&] { return s.pending_bytes > 0 || s.stopping; });
      s.writer_idle = false;
      continue;
    }
    s.wake.wait_until(lock, s.first_pending_at + s.options.flush_interval,
                      [&] { return s.stopping || s.pending_bytes >= s.options.buffer_bytes; });
    batch.swap(s.pending);
    s.in_flight = s.pending_bytes;
    s.pending_bytes = 0;
    s.in_flight_events = s.pending_events;
    s.pending_events = 0;
    const bool write = !s.failed && !s.abandon.load();
    lock.unlock();

    BatchResult result;
    if (write) {
      try {
        write_batch(s, batch, text, result);
      } catch (const std::exception& e) {  // out of memory while formatting
        result.error = "cannot format events for " + s.options.path + ": " + e.what();
      }
    }
    std::string& error = result.error;
    if (text.capacity() > 2 * kWriteChunk) text.shrink_to_fit();

    lock.lock();
    s.in_flight = 0;
    if (!s.abandon.load()) {  // else close has counted them, and reports no more
      plugin::DeliveryFigures& figures = s.account.figures();
      // Sent: the lines complete in the file (a partial one was removed);
      // the rest of the batch is lost.
      const uint64_t sent = std::min(result.lines_written, s.in_flight_events);
      figures.sent += sent;
      figures.lost += s.in_flight_events - sent;
      s.in_flight_events = 0;
      report_figures(s);
    }
    for (std::string& chunk : batch) {
      if (s.spare.size() >= max_spare) break;
      chunk.clear();
      s.spare.push_back(std::move(chunk));
    }
    batch.clear();
    if (!error.empty() && !s.failed) {
      s.failed = true;
      s.failure = std::move(error);
    }
    if (s.abandon.load()) break;
  }
  if (s.fd >= 0 && ::close(s.fd) != 0 && !s.failed) {
    s.failed = true;
    s.failure = describe_errno("cannot close", s.options.path, errno);
  }
  s.fd = -1;
  s.writer_done = true;
  s.finished.notify_all();
}

std::string drop_message(const JsonlSink::State& s) {
  return "dropped " + std::to_string(s.dropped_unlogged) + " events (" +
         std::to_string(s.dropped_total) + " in total): data not yet written to " + s.options.path +
         " exceeds max_pending_bytes=" + std::to_string(s.options.max_pending_bytes);
}

}  // namespace

JsonlSink::JsonlSink(SinkOptions options, const plugin::Host& host)
    : state_(std::make_shared<State>(std::move(options), host)) {
  State& s = *state_;
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (s.options.append ? O_APPEND : O_TRUNC);
  s.fd = ::open(s.options.path.c_str(), flags, 0644);
  if (s.fd < 0) throw std::runtime_error(describe_errno("cannot open", s.options.path, errno));

  // The writer never takes SIGPIPE (a FIFO whose reader went away): write
  // returns EPIPE instead, reported like any other write error.
  writer_ = kit::start_background_thread(run_writer, state_);
}

JsonlSink::~JsonlSink() {
  if (!closed_) {
    try {
      close(std::chrono::nanoseconds(0));
    } catch (...) {
      // Destroyed without close: whatever was pending is abandoned.
    }
  }
}

void JsonlSink::emit(const tsm_metric_event& event) {
  State& s = *state_;
  const std::size_t size = record_size(event);
  std::unique_lock lock(s.mutex);
  if (s.failed) throw std::runtime_error(s.failure);
  if (s.stopping) throw std::runtime_error("emit after close of " + s.options.path);

  if (s.pending_bytes + s.in_flight + size > s.options.max_pending_bytes) {
    ++s.dropped_total;
    ++s.dropped_unlogged;
    const Clock::time_point now = Clock::now();
    if (s.dropped_total == 1 || now - s.last_drop_log >= s.options.drop_log_interval) {
      std::string message = drop_message(s);
      s.dropped_unlogged = 0;
      s.last_drop_log = now;
      lock.unlock();
      s.host.log(TSM_LOG_WARNING, message);
    }
    return;
  }

  if (s.pending.empty() || s.pending.back().capacity() - s.pending.back().size() < size) {
    std::string chunk;
    if (!s.spare.empty()) {
      chunk = std::move(s.spare.back());
      s.spare.pop_back();
    }
    chunk.reserve(std::max(kRecordChunk, size));
    s.pending.push_back(std::move(chunk));
  }
  std::string& chunk = s.pending.back();
  const std::size_t chunk_before = chunk.size();
  try {
    append_record(chunk, event);  // fits: no reallocation, no copy of earlier records
  } catch (...) {
    chunk.resize(chunk_before);  // never leave half a record
    throw;
  }
  const std::size_t before = s.pending_bytes;
  if (before == 0) s.first_pending_at = Clock::now();
  s.pending_bytes += chunk.size() - chunk_before;
  ++s.pending_events;
  const bool wake = (before == 0 && s.writer_idle) ||
                    (before < s.options.buffer_bytes && s.pending_bytes >= s.options.buffer_bytes);
  lock.unlock();
  if (wake) s.wake.notify_one();
}

void JsonlSink::close(std::chrono::nanoseconds timeout) {
  if (closed_) return;
  closed_ = true;
  timeout = std::clamp(timeout, std::chrono::nanoseconds(0),
                       std::chrono::nanoseconds(std::chrono::hours(24)));
  const Clock::time_point deadline = Clock::now() + timeout;
  State& s = *state_;

  std::unique_lock lock(s.mutex);
  s.stopping = true;
  s.wake.notify_one();
  const bool drained = s.finished.wait_until(lock, deadline, [&] { return s.writer_done; });
  if (!drained) s.abandon = true;
  const std::size_t unwritten = s.pending_bytes + s.in_flight;
  // What the writer did not finish is lost; the last report the host gets.
  s.account.figures().lost += s.pending_events + s.in_flight_events;
  s.pending_events = s.in_flight_events = 0;
  report_figures(s);
  const std::string summary = s.account.close_summary(s.options.path, "over max_pending_bytes",
                                                      "a write failed or close timed out");
  lock.unlock();
  // The thread is released before anything below may throw.
  if (drained) {
    writer_.join();
  } else {
    s.wake.notify_one();
    writer_.detach();  // keeps its State reference; closes the file when done
  }

  lock.lock();
  std::string problem = s.failed ? s.failure : std::string();
  std::string drops = s.dropped_unlogged > 0 ? drop_message(s) : std::string();
  s.dropped_unlogged = 0;
  lock.unlock();
  if (!drained) {
    if (!problem.empty()) problem += "; ";
    problem +=
        "close timed out after " +
        std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
        " ms; " + std::to_string(unwritten) + " bytes of events not written to " + s.options.path;
  }
  if (!drops.empty()) s.host.log(TSM_LOG_WARNING, drops);
  if (!summary.empty()) s.host.log(TSM_LOG_WARNING, summary);
  if (!problem.empty()) throw std::runtime_error(problem);
}

}  // namespace tokenspeed::metrics::jsonl
