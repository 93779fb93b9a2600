// zmq_load_sink.hpp — one process's load feed: emit keeps the latest value
// of each mapped family per rank (and queues fpm commits); the sink's own
// thread sends a message when a rank's state changed, re-sends it every
// heartbeat, and binds a rank's port when the rank is first seen. emit
// allocates nothing and makes no system call but the wake-up of a sleeping
// thread on the first change after a send.
// Tested in test/integration/zmq_load_feed.py and zmq_load_engines.py.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <tokenspeed/kit/delivery_figures.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "load_fields.hpp"
#include "load_messages.hpp"
#include "msgpack_writer.hpp"
#include "rank_state.hpp"
#include "zmq_publisher.hpp"

namespace tokenspeed::metrics::zmq_load {

enum class Schema { kLoadStat, kForwardPass };

struct ZmqLoadOptions {
  Endpoint endpoint;
  Schema schema = Schema::kLoadStat;
  FieldMap fields;
  // From the settings table, through create_sink:
  std::string rank_label;
  std::chrono::milliseconds heartbeat{0};
  int64_t max_total_num_tokens = 0;  // configured capacity; 0: unknown
  uint64_t worker_id = 0;
  bool require_full_fpm = false;
  int64_t max_ranks = 0;
  int32_t process_rank = -1;  // the rank of events without rank_label; -1: none
  std::chrono::milliseconds log_interval{10000};
};

// Totals since the sink was made; readable from any thread.
struct ZmqLoadFigures {
  uint64_t messages_sent = 0;
  uint64_t messages_dropped = 0;  // missed by a subscriber at its high-water mark
  uint64_t send_failures = 0;     // any other send error
  uint64_t bind_failures = 0;
  uint64_t events_invalid = 0;       // wrong operation, not finite, rank label not a rank
  uint64_t fpm_commits_dropped = 0;  // more commits than the ring holds between sends
};

// Threading: emit from one host thread at a time; close once, after the
// last emit. The sink's thread alone touches the sockets; emit and it share
// only atomics (RankState) and the wake-up flag.
class ZmqLoadSink {
 public:
  ZmqLoadSink(ZmqLoadOptions options, const plugin::Host& host);
  ~ZmqLoadSink();
  ZmqLoadSink(const ZmqLoadSink&) = delete;
  ZmqLoadSink& operator=(const ZmqLoadSink&) = delete;

  void emit(const tsm_metric_event& event) noexcept;
  void close(std::chrono::nanoseconds timeout);
  ZmqLoadFigures figures() const noexcept;

 private:
  using Clock = std::chrono::steady_clock;
  // What the thread knows of a rank's socket and last message.
  struct Progress {
    uint64_t sent_version = 0;
    Clock::time_point last_sent{};
    Clock::time_point next_bind{};
    bool last_ok = false;  // the last message went out
  };

  std::size_t slot_of(const tsm_metric_event& event) const noexcept;
  bool update(RankState& rank, std::size_t field, const tsm_metric_event& event) noexcept;
  void wake() noexcept;
  void run();
  void publish(std::size_t slot, Clock::time_point now);
  void publish_load_stat(std::size_t slot, Clock::time_point now);
  void publish_forward_pass(std::size_t slot, Clock::time_point now);
  bool ready(std::size_t slot, Clock::time_point now);
  bool send(std::size_t slot, std::string_view topic, Clock::time_point now);
  void report_figures();

  std::size_t offset_of(std::size_t slot) const noexcept;
  int64_t rank_of(std::size_t slot) const noexcept;

  const ZmqLoadOptions options_;
  const std::size_t unset_slot_;  // the slot of events without a rank
  kit::RateLimitedLog log_;
  std::unique_ptr<RankState[]> ranks_;     // max_ranks + 1 slots
  std::atomic<uint64_t> other_events_{0};  // families outside the feed
  std::atomic<uint64_t> events_invalid_{0};
  std::atomic<uint64_t> fpm_commits_dropped_{0};
  std::atomic<uint64_t> messages_sent_{0};
  std::atomic<uint64_t> messages_dropped_{0};
  std::atomic<uint64_t> send_failures_{0};
  std::atomic<uint64_t> bind_failures_{0};
  std::atomic<bool> wake_pending_{false};
  std::atomic<bool> stopping_{false};
  std::mutex wake_mutex_;  // held only to wait or to notify
  std::condition_variable wake_;
  ZmqPublisher publisher_;          // sending thread only
  std::vector<Progress> progress_;  // sending thread only
  MsgpackWriter writer_;            // sending thread only
  kit::DeliveryAccount account_;    // sending thread, then close
  std::thread thread_;              // last: it uses everything above
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::zmq_load
