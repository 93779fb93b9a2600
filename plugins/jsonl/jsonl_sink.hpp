// jsonl_sink.hpp — one producer's jsonl output: emit copies the event into
// memory; a writer thread the sink owns formats and writes the file. emit
// never waits for the disk. The file never ends in a partial line: a failed
// write (a full disk) is cut back to its last complete line.
// Tested in test/unit/jsonl/jsonl_test.cpp (the sink of the loaded plugin).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <thread>

#include <tokenspeed/metric_reporter.hpp>

namespace tokenspeed::metrics::jsonl {

// Every value but drop_log_interval comes from the settings table, through
// create_sink.
struct SinkOptions {
  std::string path;  // {pid} already substituted
  std::chrono::milliseconds flush_interval{0};
  std::size_t buffer_bytes = 0;                // pending data that triggers a write
  std::size_t max_pending_bytes = 0;           // beyond it events are dropped
  bool append = false;                         // false: truncate at open
  std::chrono::seconds drop_log_interval{10};  // at most one drop line per interval
};

// Threading: emit is called by one host thread at a time; close once, after
// the last emit, from a host thread (repeated calls are no-ops). The writer
// thread is started by the constructor and is the only one touching the file.
class JsonlSink {
 public:
  // Opens (creates) the file and starts the writer thread. Throws
  // std::runtime_error naming the file if it cannot be opened.
  JsonlSink(SinkOptions options, const plugin::Host& host);
  ~JsonlSink();
  JsonlSink(const JsonlSink&) = delete;
  JsonlSink& operator=(const JsonlSink&) = delete;

  // Copies the event into the pending buffer. Drops and counts it when the
  // data not yet written exceeds max_pending_bytes (logged, rate-limited).
  // Throws naming the file after a write error, so the host disables the sink.
  void emit(const tsm_metric_event& event);

  // Stops accepting events and writes what is pending within timeout. On a
  // timeout the writer is abandoned (it finishes its current write, then
  // exits and closes the file) and close throws saying how much was lost.
  // Throws after a write error, naming the file.
  void close(std::chrono::nanoseconds timeout);

  struct State;  // shared with the writer thread, which may outlive the sink

 private:
  std::shared_ptr<State> state_;
  std::thread writer_;
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::jsonl
