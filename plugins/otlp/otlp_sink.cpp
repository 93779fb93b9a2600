// otlp_sink.cpp — what the otlp output does with the kit: the OTLP/HTTP
// rules (retry only 429, 502, 503, 504 and a dropped connection, honour
// Retry-After, never retry another 4xx, log a partial_success) and its log
// lines. Network I/O only on the delivery thread.
#include "otlp_sink.hpp"

#include <stdexcept>

#include <tokenspeed/kit/gzip.hpp>

#include "otlp_metrics.pb.h"

namespace tokenspeed::metrics::otlp {
namespace {

int64_t wall_clock_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool retryable_status(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

// A printable prefix of a response body, for the log.
std::string snippet(const std::string& body) {
  std::string out;
  for (char c : body.substr(0, 200)) out += (c >= 0x20 && c < 0x7f) ? c : '.';
  return out;
}

}  // namespace

OtlpSink::OtlpSink(OtlpOptions options, const plugin::Host& host)
    : options_(std::move(options)),
      log_(host, options_.log_interval),
      aggregator_(options_.aggregation),
      encoder_(options_.encoder),
      loop_(options_.delivery,
            kit::DeliveryLoop<OtlpRequest>::Callbacks{
                [this](std::vector<OtlpRequest>& out, bool final) { collect(out, final); },
                [this](const OtlpRequest& request, kit::HttpClient::Clock::time_point deadline,
                       const std::atomic<bool>* stop) { return send(request, deadline, stop); },
                [this] { http_.interrupt(); },
                [this](const OtlpRequest& request, kit::DropReason reason, const std::string& why) {
                  on_dropped(request, reason, why);
                },
                [this](const std::string& why, std::chrono::milliseconds delay) {
                  on_retrying(why, delay);
                },
            }) {
  loop_.start();
}

OtlpSink::~OtlpSink() {
  if (!closed_) loop_.close(std::chrono::nanoseconds(0));
}

void OtlpSink::emit(const tsm_metric_event& event) noexcept {
  if (aggregator_.add(event) == kit::Aggregator::Added::kBatchFull) loop_.request_export();
}

void OtlpSink::on_dropped(const OtlpRequest& request, kit::DropReason reason,
                          const std::string& why) {
  points_dropped_ += request.points;
  const char* topic = reason == kit::DropReason::kRejected    ? "export rejected"
                      : reason == kit::DropReason::kQueueFull ? "queue full"
                                                              : "close deadline";
  log_.report(TSM_LOG_WARNING, topic,
              "dropped a request of " + std::to_string(request.points) + " data points for " +
                  options_.endpoint + ": " + why + " (" + std::to_string(points_dropped_) +
                  " data points dropped in total)");
}

void OtlpSink::on_retrying(const std::string& why, std::chrono::milliseconds delay) {
  last_failure_ = why;
  log_.report(TSM_LOG_WARNING, "export failed",
              "export to " + options_.endpoint + " failed: " + why + "; retrying in " +
                  std::to_string(delay.count()) + " ms");
}

void OtlpSink::report_refused_events() {
  refused_.report(aggregator_.stats(), options_.aggregation.max_series, log_);
}

void OtlpSink::collect(std::vector<OtlpRequest>& out, bool /*final*/) {
  report_refused_events();
  const kit::Snapshot snapshot = aggregator_.collect(wall_clock_ns());
  std::vector<EncodedRequest> encoded;
  encoder_.encode(snapshot, encoded);
  for (EncodedRequest& request : encoded) {
    OtlpRequest ready;
    ready.points = request.points;
    if (options_.gzip) {
      kit::gzip_compress(request.body, ready.body);
    } else {
      ready.body = std::move(request.body);
    }
    out.push_back(std::move(ready));
  }
}

kit::SendResult OtlpSink::send(const OtlpRequest& request,
                               kit::HttpClient::Clock::time_point deadline,
                               const std::atomic<bool>* stop) {
  kit::HttpRequest http;
  http.url = options_.endpoint;
  http.body = request.body;
  http.headers = options_.headers;
  http.headers.emplace_back("Content-Type: application/x-protobuf");
  if (options_.gzip) http.headers.emplace_back("Content-Encoding: gzip");
  http.headers.emplace_back("Expect:");  // no 100-continue round trip
  const kit::HttpResponse response = http_.post(http, deadline, stop);

  if (response.status == 0) {
    if (response.stopped) return kit::SendResult::retry("interrupted by close");
    return kit::SendResult::retry(response.error);  // refused, dropped, timed out
  }
  if (response.status >= 200 && response.status < 300) {
    report_partial_success(response);
    return kit::SendResult::delivered();
  }
  const std::string why = "HTTP " + std::to_string(response.status) +
                          (response.body.empty() ? "" : ": " + snippet(response.body));
  if (retryable_status(response.status)) {
    std::optional<std::chrono::milliseconds> after;
    if (response.retry_after) after = kit::parse_retry_after(*response.retry_after);
    return kit::SendResult::retry(why, after);
  }
  return kit::SendResult::rejected(why);
}

void OtlpSink::report_partial_success(const kit::HttpResponse& response) {
  if (response.body.empty() || response.content_type.find("json") != std::string::npos) return;
  ::tokenspeed::otlp::ExportMetricsServiceResponse decoded;
  if (!decoded.ParseFromString(response.body) || !decoded.has_partial_success()) return;
  const auto& partial = decoded.partial_success();
  if (partial.rejected_data_points() == 0 && partial.error_message().empty()) return;
  log_.report(TSM_LOG_WARNING, "partial success",
              options_.endpoint + " accepted the export partly: " +
                  std::to_string(partial.rejected_data_points()) + " data points rejected" +
                  (partial.error_message().empty() ? "" : ": " + partial.error_message()));
}

void OtlpSink::close(std::chrono::nanoseconds timeout) {
  if (closed_) return;
  closed_ = true;
  const bool complete = loop_.close(timeout);
  report_refused_events();
  log_.flush(TSM_LOG_WARNING, "at close");
  if (!complete) {
    throw std::runtime_error(
        "data not delivered to " + options_.endpoint + " within close's budget (" +
        std::to_string(points_dropped_) + " data points dropped in total" +
        (last_failure_.empty() ? "" : "; last failure: " + last_failure_) + ")");
  }
}

}  // namespace tokenspeed::metrics::otlp
