// remote_write_sink.cpp — what the remote_write output does with the kit: the
// remote-write rules (retry 5xx and a dropped connection with backoff,
// honouring Retry-After; a 429 only with retry_on_429; never another 4xx,
// whose message is logged), snappy, one increasing timestamp per flush, stale
// markers at close, and its log lines. Network I/O only on the delivery thread.
#include "remote_write_sink.hpp"

#include <algorithm>
#include <stdexcept>

#include <snappy.h>

namespace tokenspeed::metrics::remote_write {
namespace {

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A printable prefix of a response body, for the log.
std::string snippet(const std::string& body) {
  std::string out;
  for (char c : body.substr(0, 300)) out += (c >= 0x20 && c < 0x7f) ? c : '.';
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

}  // namespace

RemoteWriteSink::RemoteWriteSink(RemoteWriteOptions options, const plugin::Host& host)
    : options_(std::move(options)),
      log_(host, options_.log_interval),
      aggregator_(options_.aggregation),
      encoder_(options_.encoder),
      loop_(options_.delivery,
            kit::DeliveryLoop<RemoteWriteRequest>::Callbacks{
                [this](std::vector<RemoteWriteRequest>& out, bool final) { collect(out, final); },
                [this](const RemoteWriteRequest& request,
                       kit::HttpClient::Clock::time_point deadline,
                       const std::atomic<bool>* stop) { return send(request, deadline, stop); },
                [this] { http_.interrupt(); },
                [this](const RemoteWriteRequest& request, kit::DropReason reason,
                       const std::string& why) { on_dropped(request, reason, why); },
                [this](const std::string& why, std::chrono::milliseconds delay) {
                  on_retrying(why, delay);
                },
            }) {
  loop_.start();
}

RemoteWriteSink::~RemoteWriteSink() {
  if (!closed_) loop_.close(std::chrono::nanoseconds(0));
}

void RemoteWriteSink::emit(const tsm_metric_event& event) noexcept {
  if (aggregator_.add(event) == kit::Aggregator::Added::kBatchFull) loop_.request_export();
}

int64_t RemoteWriteSink::next_timestamp_ms(bool final) {
  // Strictly after the previous flush (and its stale markers): a receiver
  // refuses a second, different sample at a timestamp it has.
  const int64_t at = std::max(wall_clock_ms(), last_timestamp_ms_ + 1);
  last_timestamp_ms_ = final ? at + 1 : at;
  return at;
}

void RemoteWriteSink::collect(std::vector<RemoteWriteRequest>& out, bool final) {
  report_refused_events();
  const int64_t timestamp_ms = next_timestamp_ms(final);
  const kit::Snapshot snapshot = aggregator_.collect(timestamp_ms * 1000000);
  // Compressed as each request is complete: one uncompressed body at a time.
  encoder_.encode(snapshot, timestamp_ms, final, [&out](EncodedRequest&& request) {
    RemoteWriteRequest ready;
    ready.samples = request.samples;
    snappy::Compress(request.body.data(), request.body.size(), &ready.body);
    ready.body.shrink_to_fit();  // Compress reserves the worst case, about the input's size
    out.push_back(std::move(ready));
  });
}

kit::SendResult RemoteWriteSink::send(const RemoteWriteRequest& request,
                                      kit::HttpClient::Clock::time_point deadline,
                                      const std::atomic<bool>* stop) {
  kit::HttpRequest http;
  http.url = options_.url;
  http.body = request.body;
  http.headers = options_.headers;
  http.headers.emplace_back("Content-Type: application/x-protobuf");
  http.headers.emplace_back("Content-Encoding: snappy");
  http.headers.emplace_back("X-Prometheus-Remote-Write-Version: 0.1.0");
  http.headers.emplace_back("User-Agent: tokenspeed-metrics-remote-write");
  http.headers.emplace_back("Expect:");  // no 100-continue round trip
  const kit::HttpResponse response = http_.post(http, deadline, stop);

  if (response.status == 0) {
    if (response.stopped) return kit::SendResult::retry("interrupted by close");
    return kit::SendResult::retry(response.error);  // refused, dropped, timed out
  }
  if (response.status >= 200 && response.status < 300) return kit::SendResult::delivered();
  const std::string body = snippet(response.body);
  const std::string why =
      "HTTP " + std::to_string(response.status) + (body.empty() ? "" : ": " + body);
  if (response.status >= 500 || (response.status == 429 && options_.retry_on_429)) {
    std::optional<std::chrono::milliseconds> after;
    if (response.retry_after) after = kit::parse_retry_after(*response.retry_after);
    return kit::SendResult::retry(why, after);
  }
  return kit::SendResult::rejected(why);
}

void RemoteWriteSink::on_dropped(const RemoteWriteRequest& request, kit::DropReason reason,
                                 const std::string& why) {
  samples_dropped_ += request.samples;
  const char* topic = reason == kit::DropReason::kRejected    ? "write rejected"
                      : reason == kit::DropReason::kQueueFull ? "queue full"
                                                              : "close deadline";
  log_.report(TSM_LOG_WARNING, topic,
              "dropped a request of " + std::to_string(request.samples) + " samples for " +
                  options_.url + ": " + why + " (" + std::to_string(samples_dropped_) +
                  " samples dropped in total)");
}

void RemoteWriteSink::on_retrying(const std::string& why, std::chrono::milliseconds delay) {
  last_failure_ = why;
  log_.report(TSM_LOG_WARNING, "write failed",
              "remote write to " + options_.url + " failed: " + why + "; retrying in " +
                  std::to_string(delay.count()) + " ms");
}

void RemoteWriteSink::report_refused_events() {
  refused_.report(aggregator_.stats(), options_.aggregation.max_series, log_);
}

void RemoteWriteSink::close(std::chrono::nanoseconds timeout) {
  if (closed_) return;
  closed_ = true;
  const bool complete = loop_.close(timeout);
  report_refused_events();
  log_.flush(TSM_LOG_WARNING, "at close");
  if (!complete) {
    throw std::runtime_error(
        "data not delivered to " + options_.url + " within close's budget (" + std::to_string(samples_dropped_) + " samples dropped in total" +
        (last_failure_.empty() ? "" : "; last failure: " + last_failure_) + ")");
  }
}

}  // namespace tokenspeed::metrics::remote_write
