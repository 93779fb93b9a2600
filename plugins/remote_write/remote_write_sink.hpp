// remote_write_sink.hpp — one producer's remote_write output: emit folds the
// event into the aggregation state; the delivery loop's thread encodes,
// snappy-compresses and POSTs it to the remote-write URL. emit never waits
// for the network.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>
#include <tokenspeed/kit/refused_events.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "remote_write_encoder.hpp"

namespace tokenspeed::metrics::remote_write {

struct RemoteWriteOptions {
  std::string url = "http://127.0.0.1:9090/api/v1/write";
  std::vector<std::string> headers;  // "Name: value", added to every request
  bool retry_on_429 = false;         // as Prometheus: a 429 is dropped unless asked
  kit::AggregationOptions aggregation;
  kit::DeliveryOptions delivery;
  EncoderOptions encoder;
  std::chrono::milliseconds log_interval{10000};  // at most one line per topic per interval
};

// One body ready to send: a snappy-compressed WriteRequest.
struct RemoteWriteRequest {
  std::string body;
  std::size_t samples = 0;
};

// Threading: emit is called by one host thread at a time; close once, after
// the last emit, from a host thread. The delivery loop's thread, started by
// the constructor, is the only one that encodes and talks to the network; it
// ends inside close.
class RemoteWriteSink {
 public:
  RemoteWriteSink(RemoteWriteOptions options, const plugin::Host& host);
  ~RemoteWriteSink();
  RemoteWriteSink(const RemoteWriteSink&) = delete;
  RemoteWriteSink& operator=(const RemoteWriteSink&) = delete;

  // Folds the event into the series state. Never blocks on I/O.
  void emit(const tsm_metric_event& event) noexcept;

  // Interrupts a request in flight, pushes the last state and the series'
  // stale markers within timeout, logs what was dropped. Throws when data
  // could not be delivered in time, saying how much.
  void close(std::chrono::nanoseconds timeout);

  kit::AggregationStats aggregation_stats() const { return aggregator_.stats(); }
  kit::DeliveryStats delivery_stats() const { return loop_.stats(); }

 private:
  void collect(std::vector<RemoteWriteRequest>& out, bool final);
  int64_t next_timestamp_ms(bool final);
  kit::SendResult send(const RemoteWriteRequest& request,
                       kit::HttpClient::Clock::time_point deadline, const std::atomic<bool>* stop);
  void on_dropped(const RemoteWriteRequest& request, kit::DropReason reason,
                  const std::string& why);
  void on_retrying(const std::string& why, std::chrono::milliseconds delay);
  void report_refused_events();

  const RemoteWriteOptions options_;
  kit::RateLimitedLog log_;
  kit::Aggregator aggregator_;
  Encoder encoder_;
  kit::HttpClient http_;
  int64_t last_timestamp_ms_ = 0;  // delivery thread only: flush timestamps only increase
  kit::RefusedEventsReport refused_;  // delivery thread only
  uint64_t samples_dropped_ = 0;
  std::string last_failure_;                    // delivery thread only, read after the loop ended
  kit::DeliveryLoop<RemoteWriteRequest> loop_;  // last: its thread uses everything above
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::remote_write
