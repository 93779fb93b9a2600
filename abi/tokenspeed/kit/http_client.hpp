/*
 * tokenspeed/kit/http_client.hpp — one HTTP POST at a time over libcurl, for
 * network outputs (OTLP/HTTP, remote write): keeps the connection alive
 * between requests, bounds every request by a deadline, ends it at once when
 * a stop flag turns true, and returns the status, Retry-After and a bounded
 * part of the body. Link libcurl (dependency('libcurl')). Delivery thread
 * only, except interrupt.
 */
#ifndef TOKENSPEED_KIT_HTTP_CLIENT_HPP
#define TOKENSPEED_KIT_HTTP_CLIENT_HPP

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

struct HttpResponse {
  long status = 0;         // 0: no response (see error)
  std::string error;       // transport failure, timeout or stop; empty when a response came
  bool timed_out = false;  // the deadline ended the request
  bool stopped = false;    // the stop flag ended the request
  std::string body;        // at most max_body bytes of the response body
  std::string content_type;
  std::optional<std::string> retry_after;  // the Retry-After header, as sent
};

struct HttpRequest {
  std::string_view url;
  std::string_view body;
  std::vector<std::string> headers;  // "Name: value"
};

/* What every request of one client shares: where it goes, the operator's
 * headers and how much of an answer is kept. Connection settings to come
 * (TLS options, credentials) belong here too, so that whoever passes this
 * struct through (kit::HttpExporter) needs no change for them. */
struct HttpClientOptions {
  std::string url;                   // http:// or https://, the full path included
  std::vector<std::string> headers;  // "Name: value", added to every request
  std::size_t max_response_body = std::size_t{64} * 1024;  // bytes of a response body kept
};

/* Threading: post is called from one thread at a time (the delivery thread);
 * interrupt from any thread. */
class HttpClient {
 public:
  using Clock = std::chrono::steady_clock;

  explicit HttpClient(HttpClientOptions options = {}) : options_(std::move(options)) {
    static std::once_flag global;
    std::call_once(global, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
    if (multi_ == nullptr || easy_ == nullptr) {
      release();
      throw std::runtime_error("cannot initialise libcurl");
    }
  }
  ~HttpClient() { release(); }
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const HttpClientOptions& options() const noexcept { return options_; }

  /* POSTs body to the options' URL with the options' headers, then
   * content_headers (Content-Type, Content-Encoding, ...), keeping at most
   * max_response_body bytes of the answer; as the post below otherwise. */
  HttpResponse post(std::string_view body, const std::vector<std::string>& content_headers,
                    Clock::time_point deadline, const std::atomic<bool>* stop = nullptr) noexcept {
    HttpRequest request;
    try {
      request.url = options_.url;
      request.body = body;
      request.headers = options_.headers;
      request.headers.insert(request.headers.end(), content_headers.begin(), content_headers.end());
      request.headers.emplace_back("Expect:");  // no 100-continue round trip
    } catch (...) {
      HttpResponse response;
      response.error = "out of memory";
      return response;
    }
    return post(request, deadline, stop, options_.max_response_body);
  }

  /* Wakes a post in flight so that it looks at its stop flag now. */
  void interrupt() noexcept {
    if (multi_ != nullptr) curl_multi_wakeup(multi_);
  }

  /* POSTs request; returns when the response is complete, deadline passes
   * or *stop turns true (stop may be null). Never throws. */
  HttpResponse post(const HttpRequest& request, Clock::time_point deadline,
                    const std::atomic<bool>* stop = nullptr,
                    std::size_t max_body = std::size_t{64} * 1024) noexcept {
    HttpResponse response;
    Capture capture{&response, max_body};
    curl_slist* headers = nullptr;
    bool added = false;
    try {
      if (stop != nullptr && stop->load(std::memory_order_acquire)) {
        response.stopped = true;
        response.error = "stopped before sending";
        return response;
      }
      const auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) {
        response.timed_out = true;
        response.error = "no time left to send";
        return response;
      }
      for (const std::string& header : request.headers) {
        curl_slist* grown = curl_slist_append(headers, header.c_str());
        if (grown == nullptr) throw std::bad_alloc();
        headers = grown;
      }
      const std::string url(request.url);
      curl_easy_reset(easy_);
      curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
      curl_easy_setopt(easy_, CURLOPT_POST, 1L);
      curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers);
      curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
      curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &Capture::body);
      curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &capture);
      curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, &Capture::header);
      curl_easy_setopt(easy_, CURLOPT_HEADERDATA, &capture);
      const long ms = static_cast<long>(std::max<int64_t>(
          1, std::chrono::duration_cast<std::chrono::milliseconds>(left).count()));
      curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, ms);
      curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, ms);
      if (curl_multi_add_handle(multi_, easy_) != CURLM_OK)
        throw std::runtime_error("curl_multi_add_handle failed");
      added = true;

      int running = 1;
      CURLcode result = CURLE_OK;
      bool finished = false;
      while (!finished) {
        if (curl_multi_perform(multi_, &running) != CURLM_OK)
          throw std::runtime_error("curl_multi_perform failed");
        int queued = 0;
        while (CURLMsg* message = curl_multi_info_read(multi_, &queued)) {
          if (message->msg == CURLMSG_DONE) {
            result = message->data.result;
            finished = true;
          }
        }
        if (finished) break;
        if (stop != nullptr && stop->load(std::memory_order_acquire)) {
          response.stopped = true;
          response.error = "stopped while the request was in flight";
          break;
        }
        const auto now = Clock::now();
        if (now >= deadline) {
          response.timed_out = true;
          response.error = "no response within the timeout";
          break;
        }
        // Bounded waits: a stop flag set without interrupt is seen within 50 ms.
        const auto wait = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(50));
        curl_multi_poll(
            multi_, nullptr, 0,
            static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) +
                1,
            nullptr);
      }
      if (finished) {
        if (result == CURLE_OK) {
          curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &response.status);
        } else {
          response.timed_out = result == CURLE_OPERATION_TIMEDOUT;
          response.error = curl_easy_strerror(result);
          response.status = 0;
        }
      }
    } catch (const std::exception& e) {
      response.error = e.what();
    } catch (...) {
      response.error = "unknown failure";
    }
    if (added) curl_multi_remove_handle(multi_, easy_);
    if (easy_ != nullptr) curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, nullptr);
    curl_slist_free_all(headers);
    if (!response.error.empty()) response.status = 0;
    return response;
  }

 private:
  struct Capture {
    HttpResponse* response;
    std::size_t max_body;

    static size_t body(char* data, size_t size, size_t count, void* self) noexcept {
      auto* capture = static_cast<Capture*>(self);
      const size_t bytes = size * count;
      std::string& out = capture->response->body;
      try {
        if (out.size() < capture->max_body)
          out.append(data, std::min(bytes, capture->max_body - out.size()));
      } catch (...) {  // out of memory: the answer is quoted shorter; the status still counts
      }
      return bytes;
    }

    static size_t header(char* data, size_t size, size_t count, void* self) noexcept {
      auto* capture = static_cast<Capture*>(self);
      const size_t bytes = size * count;
      try {
        std::string_view line(data, bytes);
        if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100 Continue)
          capture->response->retry_after.reset();
          capture->response->content_type.clear();
          return bytes;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) return bytes;
        std::string name(line.substr(0, colon));
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
          value.remove_prefix(1);
        while (!value.empty() &&
               (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
          value.remove_suffix(1);
        if (name == "retry-after") capture->response->retry_after = std::string(value);
        if (name == "content-type") capture->response->content_type = std::string(value);
      } catch (...) {  // out of memory: the request is judged by its status alone
      }
      return bytes;
    }
  };

  void release() noexcept {
    if (easy_ != nullptr) curl_easy_cleanup(easy_);
    if (multi_ != nullptr) curl_multi_cleanup(multi_);
    easy_ = nullptr;
    multi_ = nullptr;
  }

  const HttpClientOptions options_;
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_HTTP_CLIENT_HPP
