// statsd_sink.hpp — one producer's statsd output: emit folds counters and
// gauges into the per-flush aggregation (or formats them, aggregation off)
// and formats histogram observations into a bounded text buffer; the
// delivery loop's thread packs the lines into datagrams and sends them
// without ever blocking. emit never touches the socket.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/delivery_figures.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>
#include <tokenspeed/kit/refused_events.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "statsd_format.hpp"
#include "statsd_packer.hpp"
#include "statsd_socket.hpp"

namespace tokenspeed::metrics::statsd {

struct StatsdOptions {
  Address address;
  FormatOptions format;
  // Every value below but log_interval comes from the settings table, through create_sink.
  std::size_t max_datagram_bytes = 0;
  bool aggregate = false;            // counters summed, gauges last value, per flush
  std::size_t max_buffer_bytes = 0;  // formatted lines waiting for the next flush
  std::chrono::milliseconds flush_interval{0};
  std::chrono::milliseconds dns_refresh{0};
  std::size_t max_series = 0;
  std::chrono::milliseconds log_interval{10000};  // at most one line per topic per interval
};

// One flush's datagrams.
struct DatagramBatch {
  std::vector<std::string> datagrams;
  uint64_t events = 0;              // the events of the flush, for the delivery figures
  std::size_t oversized_bytes = 0;  // of lines no datagram could hold (their events' share)
};

// Totals since the sink was made; readable from any thread.
struct StatsdSinkFigures {
  uint64_t events = 0;              // accepted by emit
  uint64_t events_buffer_full = 0;  // dropped: the text buffer was full
  uint64_t events_over_series = 0;  // dropped: beyond max_series (aggregation)
  uint64_t events_invalid = 0;      // NaN/infinite, negative delta, wrong operation
  uint64_t lines_oversized = 0;     // a line longer than max_datagram_bytes
  uint64_t datagrams_sent = 0;
  uint64_t datagrams_dropped = 0;  // send buffer full, peer refused, socket gone
  uint64_t bytes_sent = 0;
};

// Threading: emit is called by one host thread at a time; close once, after
// the last emit, from a host thread. The delivery loop's thread, started by
// the constructor, alone packs, resolves and sends; it ends inside close.
// emit and the loop share the text buffer under one mutex (held for one
// append, or for a swap).
class StatsdSink {
 public:
  StatsdSink(StatsdOptions options, const plugin::Host& host);
  ~StatsdSink();
  StatsdSink(const StatsdSink&) = delete;
  StatsdSink& operator=(const StatsdSink&) = delete;

  void emit(const tsm_metric_event& event) noexcept;

  // Sends what is left within timeout; throws when anything was lost during
  // the sink's life (dropped datagrams or events), saying how much.
  void close(std::chrono::nanoseconds timeout);

  StatsdSinkFigures figures() const noexcept;

 private:
  void collect(std::vector<DatagramBatch>& out, bool final);
  kit::SendResult send(const DatagramBatch& batch);
  void report();
  void report_figures();  // delivery thread, then close
  std::string loss_summary() const;

  const StatsdOptions options_;
  kit::RateLimitedLog log_;
  kit::Aggregator aggregator_;
  DatagramSocket socket_;  // delivery thread only
  DatagramPacker packer_;  // delivery thread only
  std::string spare_;      // delivery thread only: the buffer swapped out
  std::string scratch_;    // delivery thread only: one aggregated line
  std::mutex text_mutex_;  // guards text_
  std::string text_;       // formatted lines, '\n'-terminated
  std::atomic<uint64_t> events_{0};
  std::atomic<uint64_t> events_buffer_full_{0};
  std::atomic<uint64_t> events_invalid_{0};
  std::atomic<uint64_t> datagrams_sent_{0};
  std::atomic<uint64_t> datagrams_dropped_{0};
  std::atomic<uint64_t> bytes_sent_{0};
  std::atomic<uint64_t> lines_oversized_{0};
  // Delivery thread only: the series limit and invalid events, as the kit says them.
  kit::RefusedEventsReport refused_{
      "NaN or infinite, a negative counter delta, weight 0 or an operation that does not fit "
      "the metric's kind"};
  StatsdSinkFigures reported_;             // delivery thread only: what the log already said
  kit::DeliveryAccount account_;           // delivery thread, then close
  uint64_t collected_events_ = 0;          // delivery thread only: events of earlier flushes
  uint64_t events_oversized_ = 0;          // delivery thread only: events of left-out lines
  std::string last_failure_;               // delivery thread only, read after the loop ended
  kit::DeliveryLoop<DatagramBatch> loop_;  // last: its thread uses everything above
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::statsd
