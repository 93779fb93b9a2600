// test_sinks.hpp — in-process C-ABI sinks for the pipeline tests: one
// configurable sink that records what it receives and can misbehave on
// demand (fail, throw, block, sleep, ignore its close timeout); the log
// lines an output writes; waiting for a condition (eventually.hpp). Test
// code only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <tokenspeed/metric_reporter.h>

#include "eventually.hpp"
#include "pipeline/sink_delivery.hpp"

namespace tokenspeed::metrics::test {

// A latch a misbehaving plugin blocks on until the test opens it. The wait is
// bounded (a hang guard only).
class Gate {
 public:
  void open() {
    std::lock_guard lock(mutex_);
    open_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lock(mutex_);
    waiting_++;
    cv_.notify_all();
    cv_.wait_for(lock, std::chrono::seconds(60), [&] { return open_; });
  }
  // Blocks the test until a plugin call waits on the gate (hang guard).
  bool wait_for_waiter() {
    std::unique_lock lock(mutex_);
    return cv_.wait_for(lock, std::chrono::seconds(30), [&] { return waiting_ > 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

struct RecordedEvent {
  std::int64_t timestamp_ns;
  std::string metric;
  std::uint32_t operation;
  double value;
  std::uint64_t weight;
  std::vector<std::pair<std::string, std::string>> labels;
  const tsm_metric_info* info;
};

struct TestSink {
  // ---- behaviour
  int fail_emit_at = -1;       // the emit call (0-based) that returns TSM_ERROR
  bool throw_in_emit = false;  // throw instead of returning an error
  bool throw_in_close = false;
  int close_rc = TSM_OK;
  std::chrono::microseconds emit_delay{0};
  std::chrono::microseconds close_delay{0};  // honoured up to the timeout
  Gate* emit_gate = nullptr;                 // every emit blocks until the gate opens
  Gate* close_gate = nullptr;                // close blocks (ignoring its timeout)
  bool record = true;

  // ---- what happened
  std::atomic<int> emits{0};
  std::atomic<int> emits_ok{0};
  std::atomic<int> closes{0};
  std::atomic<bool> in_emit{false};
  std::atomic<bool> overlapping_emits{false};  // two emits at once: never allowed
  std::atomic<bool> emit_during_or_after_close{false};
  std::atomic<std::int64_t> close_timeout_ns{-1};
  std::atomic<bool> info_valid_at_close{false};
  std::atomic<int> close_order{-1};
  std::atomic<std::int64_t> emit_returned_at_tick{0};
  std::mutex mutex;
  std::vector<RecordedEvent> events;
  const tsm_metric_info* last_info = nullptr;

  static int emit(void* self, const tsm_metric_event* e, tsm_buffer* error) {
    auto* s = static_cast<TestSink*>(self);
    if (s->closes.load() > 0) s->emit_during_or_after_close = true;
    if (s->in_emit.exchange(true)) s->overlapping_emits = true;
    const int n = s->emits.fetch_add(1);
    if (s->emit_gate != nullptr) s->emit_gate->wait();
    if (s->emit_delay.count() > 0) std::this_thread::sleep_for(s->emit_delay);
    if (s->record) {
      RecordedEvent r{e->timestamp_ns, e->metric, e->operation, e->value, e->weight, {}, e->info};
      for (std::uint32_t i = 0; i < e->label_count; ++i)
        r.labels.emplace_back(e->label_names[i], e->label_values[i]);
      std::lock_guard lock(s->mutex);
      s->events.push_back(std::move(r));
      s->last_info = e->info;
    }
    s->in_emit = false;
    if (n == s->fail_emit_at) {
      if (s->throw_in_emit) throw std::runtime_error("emit exploded");
      const char msg[] = "destination rejected the event";
      error->assign(error, msg, sizeof msg - 1);
      return TSM_ERROR;
    }
    s->emits_ok.fetch_add(1);
    return TSM_OK;
  }

  static int close(void* self, std::int64_t timeout_ns, tsm_buffer* error) {
    auto* s = static_cast<TestSink*>(self);
    if (s->in_emit) s->emit_during_or_after_close = true;
    s->close_timeout_ns = timeout_ns;
    s->close_order = next_close_order().fetch_add(1);
    {
      std::lock_guard lock(s->mutex);
      s->info_valid_at_close = s->last_info == nullptr ||
                               (s->last_info->name != nullptr && s->last_info->name[0] != '\0');
    }
    if (s->close_gate != nullptr) s->close_gate->wait();
    if (s->close_delay.count() > 0) {
      std::this_thread::sleep_for(
          std::min<std::chrono::nanoseconds>(s->close_delay, std::chrono::nanoseconds(timeout_ns)));
    }
    s->closes.fetch_add(1);
    if (s->throw_in_close) throw std::runtime_error("close exploded");
    if (s->close_rc != TSM_OK) {
      const char msg[] = "flush failed";
      error->assign(error, msg, sizeof msg - 1);
    }
    return s->close_rc;
  }

  static std::atomic<int>& next_close_order() {
    static std::atomic<int> order{0};
    return order;
  }

  std::vector<RecordedEvent> snapshot() {
    std::lock_guard lock(mutex);
    return events;
  }
};

inline const tsm_sink_vtable kTestSinkVtable = {sizeof(tsm_sink_vtable), &TestSink::emit,
                                                &TestSink::close};

// An output whose create_sink hands out sink (or fails with create_rc), and
// counts its calls.
inline OutputDefinition test_output(std::string name, TestSink* sink,
                                    std::atomic<int>* create_calls = nullptr,
                                    int create_rc = TSM_OK, Gate* create_gate = nullptr) {
  return OutputDefinition{std::move(name),
                          [=](tsm_sink& out, std::string& error) {
                            if (create_calls != nullptr) create_calls->fetch_add(1);
                            if (create_gate != nullptr) create_gate->wait();
                            if (create_rc != TSM_OK) {
                              error = "cannot reach the collector";
                              return create_rc;
                            }
                            out.vtable = &kTestSinkVtable;
                            out.self = sink;
                            return static_cast<int>(TSM_OK);
                          },
                          ""};
}

// Collects the lines an output logs (any thread).
struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  LogWriter writer() {
    return [this](std::string_view line) {
      std::lock_guard lock(mutex);
      lines.emplace_back(line);
    };
  }
  std::string all() {
    std::lock_guard lock(mutex);
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    return text;
  }
  std::vector<std::string> matching(const std::regex& pattern) {
    std::lock_guard lock(mutex);
    std::vector<std::string> out;
    for (const std::string& line : lines)
      if (std::regex_search(line, pattern)) out.push_back(line);
    return out;
  }
};

// The accounting identity of the issue, checked on a stats snapshot.
inline bool identity_holds(const SinkFigures& s) {
  return s.accepted == s.delivered + s.dropped_ring_full + s.dropped_sink_disabled +
                           s.dropped_after_close + s.discarded_at_deadline + s.queue_depth;
}

}  // namespace tokenspeed::metrics::test
