/*
 * tokenspeed/kit/http_response.hpp — what a receiver's answer to one POST
 * means for the delivery loop: an HttpResponse (http_client.hpp) turned into
 * a SendResult (delivery_loop.hpp), delivered, retried (honouring
 * Retry-After) or rejected quoting the answer, by a small policy that says
 * which statuses are worth another attempt:
 *
 *   kit::HttpRetryPolicy policy;   // OTLP's: 408, 429, 502, 503, 504
 *   policy.retry_5xx = true;       // remote write: every 5xx
 *   policy.retry_429 = false;      //   and 429 only when asked
 *   const kit::SendResult result = kit::classify_http_response(response, policy);
 *
 * Header-only C++17; needs libcurl (http_client.hpp). Never used on the
 * event path.
 */
#ifndef TOKENSPEED_KIT_HTTP_RESPONSE_HPP
#define TOKENSPEED_KIT_HTTP_RESPONSE_HPP

#include <tokenspeed/kit/backoff.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/http_client.hpp>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace tokenspeed::metrics::kit {

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

/* Which answers of a receiver are retried. Always retried: no answer at all
 * (refused, timed out, dropped: status 0), 408 Request Timeout (the same
 * timeout, seen from the receiver's side), 502, 503 and 504 (a proxy or the
 * receiver is down or overloaded: it did not take the data). Never retried:
 * any other 4xx, 1xx and 3xx (a retry would send the same request to the
 * same refusal).
 *
 * The default is the OTLP/HTTP specification's rule, which retries 429,
 * 502, 503 and 504 only: a 500 (or 501) is the receiver failing on this
 * very request, and resending it would fail the same way and hold up the
 * data behind it. Prometheus remote write retries every 5xx (retry_5xx) and
 * a 429 only when configured (retry_429, Prometheus's retry_on_http_429). */
struct HttpRetryPolicy {
  bool retry_429 = true;   // 429 Too Many Requests: retried, honouring Retry-After
  bool retry_5xx = false;  // every 5xx, 500 and 501 included (else only 502, 503, 504)
  /* The answers are a gRPC call's: judged by their grpc-status under the
   * OTLP/gRPC rule (kit/grpc.hpp's classify_grpc_response), not by the
   * rules above. HttpExporter sends them framed by its derived class. */
  bool grpc = false;
};

/* true when policy retries an answer of status (100-599). */
inline bool http_status_retried(long status, const HttpRetryPolicy& policy) noexcept {
  if (status == 408 || status == 502 || status == 503 || status == 504) return true;
  if (status == 429) return policy.retry_429;
  return policy.retry_5xx && status >= 500 && status < 600;
}

/* The SendResult of one attempt's response:
 *  - status 0 (no answer): retried, "interrupted by close" when the stop flag
 *    ended it, else the client's error ("connection refused", a timeout);
 *  - 2xx: delivered;
 *  - a status the policy retries: retried with "HTTP <status>: <answer>" and
 *    the delay of its Retry-After (seconds or a date; the delivery loop caps
 *    it), if it has a valid one;
 *  - any other: rejected (the data is dropped) with "HTTP <status>: <answer>".
 * <answer> is response_snippet of the body, left out when empty. */
inline SendResult classify_http_response(const HttpResponse& response,
                                         const HttpRetryPolicy& policy = {}) {
  if (response.status == 0) {
    if (response.stopped) return SendResult::retry("interrupted by close");
    return SendResult::retry(response.error);  // refused, dropped, timed out
  }
  if (response.status >= 200 && response.status < 300) return SendResult::delivered();
  const std::string answer = response_snippet(response.body);
  std::string why = "HTTP " + std::to_string(response.status);
  if (!answer.empty()) why += ": " + answer;
  if (!http_status_retried(response.status, policy)) return SendResult::rejected(std::move(why));
  std::optional<std::chrono::milliseconds> after;
  if (response.retry_after) after = parse_retry_after(*response.retry_after);
  return SendResult::retry(std::move(why), after);
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_HTTP_RESPONSE_HPP
