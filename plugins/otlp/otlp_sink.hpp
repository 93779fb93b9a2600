// otlp_sink.hpp — one producer's otlp output: emit folds the event into the
// aggregation state; the delivery loop's thread encodes, compresses and POSTs
// it to the OTLP/HTTP endpoint. emit never waits for the network.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>
#include <tokenspeed/kit/refused_events.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "otlp_encoder.hpp"

namespace tokenspeed::metrics::otlp {

struct OtlpOptions {
  std::string endpoint = "http://127.0.0.1:4318/v1/metrics";
  std::vector<std::string> headers;  // "Name: value", added to every request
  bool gzip = true;
  kit::AggregationOptions aggregation;
  kit::DeliveryOptions delivery;
  EncoderOptions encoder;
  std::chrono::milliseconds log_interval{10000};  // at most one line per topic per interval
};

// One body ready to send: protobuf, compressed when gzip is on.
struct OtlpRequest {
  std::string body;
  std::size_t points = 0;
};

// Threading: emit is called by one host thread at a time; close once, after
// the last emit, from a host thread. The delivery loop's thread, started by
// the constructor, is the only one that encodes and talks to the network; it
// ends inside close.
class OtlpSink {
 public:
  OtlpSink(OtlpOptions options, const plugin::Host& host);
  ~OtlpSink();
  OtlpSink(const OtlpSink&) = delete;
  OtlpSink& operator=(const OtlpSink&) = delete;

  // Folds the event into the series state; a series beyond max_series is
  // counted and reported from the delivery thread. Never blocks on I/O.
  void emit(const tsm_metric_event& event) noexcept;

  // Interrupts a request in flight, exports the last state within timeout,
  // logs what was dropped. Throws when data could not be delivered in time,
  // saying how much.
  void close(std::chrono::nanoseconds timeout);

  kit::AggregationStats aggregation_stats() const { return aggregator_.stats(); }
  kit::DeliveryStats delivery_stats() const { return loop_.stats(); }

 private:
  void collect(std::vector<OtlpRequest>& out, bool final);
  kit::SendResult send(const OtlpRequest& request, kit::HttpClient::Clock::time_point deadline,
                       const std::atomic<bool>* stop);
  // Delivery thread: a request given up, an attempt that will be retried.
  void on_dropped(const OtlpRequest& request, kit::DropReason reason, const std::string& why);
  void on_retrying(const std::string& why, std::chrono::milliseconds delay);
  void report_refused_events();
  void report_partial_success(const kit::HttpResponse& response);

  const OtlpOptions options_;
  kit::RateLimitedLog log_;
  kit::Aggregator aggregator_;
  Encoder encoder_;
  kit::HttpClient http_;
  kit::RefusedEventsReport refused_;  // delivery thread only
  uint64_t points_dropped_ = 0;
  std::string last_failure_;             // delivery thread only, read after the loop ended
  kit::DeliveryLoop<OtlpRequest> loop_;  // last: its thread uses everything above
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::otlp
