/*
 * tokenspeed/kit/http_exporter.hpp — the base of an output that aggregates
 * events and POSTs them over HTTP (OTLP/HTTP, remote write): the Aggregator
 * emit folds into, the DeliveryLoop wired to an HttpClient, the log lines
 * of a request dropped or retried (quoting the receiver's answer), the
 * refused-events report and close's verdict. The derived class (CRTP) only
 * encodes and says which statuses to retry:
 *
 *   class MySink : public kit::HttpExporter<MySink> {
 *    public:
 *     MySink(kit::HttpExporterOptions options, const plugin::Host& host)
 *         : HttpExporter(std::move(options), kWords, host) { start(); }  // last
 *     ~MySink() { stop(); }                                              // first
 *     // delivery thread:
 *     void collect(std::vector<kit::ExportRequest>& out, bool final);  // encode
 *     const std::vector<std::string>& content_headers() const;          // Content-Type, ...
 *     bool retryable(long status) const;                               // e.g. 429, 5xx
 *     void delivered(const kit::HttpResponse& response);               // may do nothing
 *   };
 *
 * Also the settings every HTTP exporter has: the URL, header and backoff
 * checks, the HttpClientOptions and DeliveryOptions they make, the host
 * name. Header-only C++17; needs
 * libcurl (http_client.hpp).
 */
#ifndef TOKENSPEED_KIT_HTTP_EXPORTER_HPP
#define TOKENSPEED_KIT_HTTP_EXPORTER_HPP

#include <unistd.h>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/backoff.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/json.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>
#include <tokenspeed/kit/refused_events.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

// ------------------------------------------------------------------ settings

/* Rows of an HTTP exporter's settings table for the keys the functions below
 * read (headers, timeout_ms, initial_backoff_ms, max_backoff_ms) and the
 * usual series bound; the plugin gives the defaults, as JSON text. */
constexpr Setting http_headers_setting(std::string_view description) {
  return Setting("headers", SettingType::kStringMap, "{}", 0, 0, description);
}
constexpr Setting http_timeout_setting(std::string_view default_ms, std::string_view description) {
  return Setting("timeout_ms", SettingType::kInteger, default_ms, 1, 600000, description);
}
constexpr Setting initial_backoff_setting(std::string_view default_ms) {
  return Setting("initial_backoff_ms", SettingType::kInteger, default_ms, 1, 600000,
                 "First retry delay after a retryable failure; doubles per failure, with 20% "
                 "jitter.");
}
constexpr Setting max_backoff_setting(std::string_view default_ms) {
  return Setting("max_backoff_ms", SettingType::kInteger, default_ms, 1, 3600000,
                 "Longest retry delay (unless Retry-After asks for more, up to 5 minutes).");
}
constexpr Setting max_series_setting(std::string_view default_count) {
  return Setting("max_series", SettingType::kInteger, default_count, 1, 10000000,
                 "Series held per process; events of further series are dropped, counted and "
                 "logged.");
}

/* Checks the settings every HTTP exporter has, after SettingsTable::validate:
 * the URL (key url_key) starts with http:// or https://, and every header of
 * the map headers_key has a name without ':', space or line break and a
 * value without a line break. Throws std::invalid_argument naming the key. */
inline void check_http_settings(const json::Value& settings, std::string_view url_key,
                                std::string_view headers_key = "headers") {
  const std::string& url = settings.at(url_key).as_string();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    throw std::invalid_argument("'" + std::string(url_key) +
                                "' must start with http:// or https://, got \"" + url + "\"");
  }
  for (const auto& [name, value] : settings.at(headers_key).as_object()) {
    if (name.empty() || name.find_first_of(":\r\n ") != std::string::npos ||
        value.as_string().find_first_of("\r\n") != std::string::npos) {
      throw std::invalid_argument("'" + std::string(headers_key) + "': '" + name +
                                  "' is not a valid header");
    }
  }
}

/* The HttpClientOptions of checked settings: the URL and the headers as
 * "Name: value" lines. */
inline HttpClientOptions http_client_options(const Settings& settings, std::string_view url_key,
                                             std::string_view headers_key = "headers") {
  HttpClientOptions options;
  options.url = settings.string(url_key);
  for (const auto& [name, value] : settings.string_map(headers_key))
    options.headers.push_back(name + ": " + value);
  return options;
}

/* Checks initial_backoff_ms <= max_backoff_ms. */
inline void check_backoff_settings(const json::Value& settings) {
  if (settings.at("max_backoff_ms").as_integer() < settings.at("initial_backoff_ms").as_integer())
    throw std::invalid_argument("'max_backoff_ms' must be at least 'initial_backoff_ms'");
}

/* The DeliveryOptions of checked settings: the interval from interval_key,
 * timeout_ms, initial_backoff_ms and max_backoff_ms (milliseconds). The
 * rest (max_pending, recollect_on_retry) is the caller's. */
inline DeliveryOptions delivery_options(const Settings& settings, std::string_view interval_key) {
  DeliveryOptions options;
  options.interval = std::chrono::milliseconds(settings.integer(interval_key));
  options.attempt_timeout = std::chrono::milliseconds(settings.integer("timeout_ms"));
  options.backoff.initial = std::chrono::milliseconds(settings.integer("initial_backoff_ms"));
  options.backoff.max = std::chrono::milliseconds(settings.integer("max_backoff_ms"));
  return options;
}

/* This machine's host name, "localhost" when it has none. */
inline std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

// ----------------------------------------------------------------- the base

/* The longest part of a receiver's answer a log line quotes. */
inline constexpr std::size_t kResponseSnippetBytes = 200;

/* A printable prefix of a response body for the log: its first
 * kResponseSnippetBytes bytes, trailing line breaks and spaces dropped, any
 * other byte outside printable ASCII written as '.'. */
inline std::string response_snippet(std::string_view body) {
  body = body.substr(0, kResponseSnippetBytes);
  while (!body.empty() && static_cast<unsigned char>(body.back()) <= 0x20) body.remove_suffix(1);
  std::string out;
  for (const char c : body) out += (c >= 0x20 && c < 0x7f) ? c : '.';
  return out;
}

/* One request body ready to POST, and how many data items it carries. */
struct ExportRequest {
  std::string body;
  std::size_t items = 0;  // data points, samples: counted when dropped
};

/* Everything the base needs; each plugin fills it from its settings table
 * in create_sink. */
struct HttpExporterOptions {
  HttpClientOptions http;  // passed through to the HttpClient as it is
  AggregationOptions aggregation;
  DeliveryOptions delivery;
  std::chrono::milliseconds log_interval{10000};  // at most one line per topic per interval
};

/* The words of an exporter's log lines. */
struct HttpExporterWords {
  const char* items;           // "data points"
  const char* rejected_topic;  // "export rejected"
  const char* failed_topic;    // "export failed"
  const char* attempt;         // "export": "<attempt> to <url> failed: ..."
};

/* Threading: emit is called by one host thread at a time; close once, after
 * the last emit, from a host thread. The delivery loop's thread, started by
 * start(), is the only one that calls the derived class's collect,
 * content_headers, retryable and delivered, and talks to the network; it
 * ends inside close (or stop). */
template <class Derived>
class HttpExporter {
 public:
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  /* Folds the event into the series state; a series beyond max_series is
   * counted and reported from the delivery thread. Never blocks on I/O. */
  void emit(const tsm_metric_event& event) noexcept {
    if (aggregator_.add(event) == Aggregator::Added::kBatchFull) loop_.request_export();
  }

  /* Interrupts a request in flight, exports the last state within timeout,
   * logs what was dropped. Throws when data could not be delivered in time,
   * saying how much. */
  void close(std::chrono::nanoseconds timeout) {
    if (closed_) return;
    closed_ = true;
    const bool complete = loop_.close(timeout);
    report_refused_events();
    log_.flush(TSM_LOG_WARNING, "at close");
    if (!complete) {
      throw std::runtime_error(
          "data not delivered to " + url() + " within close's budget (" +
          std::to_string(items_dropped_) + " " + words_.items + " dropped in total" +
          (last_failure_.empty() ? "" : "; last failure: " + last_failure_) + ")");
    }
  }

 protected:
  HttpExporter(HttpExporterOptions options, HttpExporterWords words, const plugin::Host& host)
      : options_(std::move(options)),
        words_(words),
        log_(host, options_.log_interval),
        aggregator_(options_.aggregation),
        http_(options_.http),
        loop_(options_.delivery, callbacks()) {}
  ~HttpExporter() { stop(); }

  /* Starts the delivery thread: the last line of the derived constructor. */
  void start() { loop_.start(); }
  /* Ends the delivery thread without a final export unless close did: the
   * first line of the derived destructor (its members go before ours). */
  void stop() noexcept {
    if (!closed_) loop_.close(std::chrono::nanoseconds(0));
  }

  const HttpExporterOptions& options() const noexcept { return options_; }
  const std::string& url() const noexcept { return options_.http.url; }
  Aggregator& aggregator() noexcept { return aggregator_; }
  RateLimitedLog& log() noexcept { return log_; }

 private:
  Derived& derived() noexcept { return static_cast<Derived&>(*this); }

  typename DeliveryLoop<ExportRequest>::Callbacks callbacks() {
    return {
        [this](std::vector<ExportRequest>& out, bool final) {
          report_refused_events();
          derived().collect(out, final);
        },
        [this](const ExportRequest& request, HttpClient::Clock::time_point deadline,
               const std::atomic<bool>* stop) { return send(request, deadline, stop); },
        [this] { http_.interrupt(); },
        [this](const ExportRequest& request, DropReason reason, const std::string& why) {
          dropped(request, reason, why);
        },
        [this](const std::string& why, std::chrono::milliseconds delay) { retrying(why, delay); },
    };
  }

  SendResult send(const ExportRequest& request, HttpClient::Clock::time_point deadline,
                  const std::atomic<bool>* stop) {
    const HttpResponse response =
        http_.post(request.body, derived().content_headers(), deadline, stop);
    if (response.status == 0) {
      if (response.stopped) return SendResult::retry("interrupted by close");
      return SendResult::retry(response.error);  // refused, dropped, timed out
    }
    if (response.status >= 200 && response.status < 300) {
      derived().delivered(response);
      return SendResult::delivered();
    }
    const std::string answer = response_snippet(response.body);
    const std::string why =
        "HTTP " + std::to_string(response.status) + (answer.empty() ? "" : ": " + answer);
    if (derived().retryable(response.status)) {
      std::optional<std::chrono::milliseconds> after;
      if (response.retry_after) after = parse_retry_after(*response.retry_after);
      return SendResult::retry(why, after);
    }
    return SendResult::rejected(why);
  }

  // Delivery thread: a request given up.
  void dropped(const ExportRequest& request, DropReason reason, const std::string& why) {
    items_dropped_ += request.items;
    const char* topic = reason == DropReason::kRejected    ? words_.rejected_topic
                        : reason == DropReason::kQueueFull ? "queue full"
                                                           : "close deadline";
    log_.report(TSM_LOG_WARNING, topic,
                "dropped a request of " + std::to_string(request.items) + " " + words_.items +
                    " for " + url() + ": " + why + " (" + std::to_string(items_dropped_) + " " +
                    words_.items + " dropped in total)");
  }

  // Delivery thread: an attempt that will be retried.
  void retrying(const std::string& why, std::chrono::milliseconds delay) {
    last_failure_ = why;
    log_.report(TSM_LOG_WARNING, words_.failed_topic,
                std::string(words_.attempt) + " to " + url() + " failed: " + why +
                    "; retrying in " + std::to_string(delay.count()) + " ms");
  }

  void report_refused_events() {
    refused_.report(aggregator_.stats(), options_.aggregation.max_series, log_);
  }

  const HttpExporterOptions options_;
  const HttpExporterWords words_;
  RateLimitedLog log_;
  Aggregator aggregator_;
  HttpClient http_;
  RefusedEventsReport refused_;       // delivery thread only
  uint64_t items_dropped_ = 0;        // delivery thread only
  std::string last_failure_;          // delivery thread only, read after the loop ended
  DeliveryLoop<ExportRequest> loop_;  // last: its thread uses everything above
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_HTTP_EXPORTER_HPP
