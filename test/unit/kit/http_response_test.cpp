// http_response_test.cpp — what a receiver's answer means for the delivery
// loop: no answer retried, 2xx delivered, 408, 429, 502, 503 and 504 retried
// honouring Retry-After, 500 and the other 5xx only when the policy says so,
// every other status rejected quoting the receiver's answer.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>

#include <tokenspeed/kit/http_response.hpp>

namespace kit = tokenspeed::metrics::kit;
using Outcome = kit::SendResult::Outcome;

namespace {

kit::HttpResponse answer(long status, std::string body = {},
                         std::optional<std::string> retry_after = std::nullopt) {
  kit::HttpResponse response;
  response.status = status;
  response.body = std::move(body);
  response.retry_after = std::move(retry_after);
  return response;
}

kit::HttpRetryPolicy remote_write(bool retry_429) {
  kit::HttpRetryPolicy policy;
  policy.retry_5xx = true;
  policy.retry_429 = retry_429;
  return policy;
}

}  // namespace

TEST_CASE("no answer is retried with the client's error, or as interrupted by close") {
  kit::HttpResponse refused;
  refused.error = "Couldn't connect to server";
  const kit::SendResult result = kit::classify_http_response(refused);
  CHECK(result.outcome == Outcome::kRetry);
  CHECK(result.message == "Couldn't connect to server");
  CHECK_FALSE(result.retry_after);

  kit::HttpResponse stopped;
  stopped.stopped = true;
  stopped.error = "stopped";
  CHECK(kit::classify_http_response(stopped).outcome == Outcome::kRetry);
  CHECK(kit::classify_http_response(stopped).message == "interrupted by close");
}

TEST_CASE("every 2xx is delivered") {
  for (const long status : {200L, 201L, 202L, 204L, 299L}) {
    CAPTURE(status);
    const kit::SendResult result = kit::classify_http_response(answer(status, "ok"));
    CHECK(result.outcome == Outcome::kDelivered);
    CHECK(result.message.empty());
  }
}

TEST_CASE("the default policy retries 408, 429, 502, 503 and 504, as OTLP/HTTP says") {
  for (const long status : {408L, 429L, 502L, 503L, 504L}) {
    CAPTURE(status);
    CHECK(kit::classify_http_response(answer(status)).outcome == Outcome::kRetry);
  }
  for (const long status : {100L, 301L, 400L, 401L, 403L, 404L, 413L, 500L, 501L, 505L}) {
    CAPTURE(status);
    CHECK(kit::classify_http_response(answer(status)).outcome == Outcome::kRejected);
  }
}

TEST_CASE("the remote-write policy retries every 5xx, and 429 only when asked") {
  for (const long status : {500L, 501L, 502L, 503L, 504L, 505L, 599L, 408L}) {
    CAPTURE(status);
    CHECK(kit::classify_http_response(answer(status), remote_write(false)).outcome ==
          Outcome::kRetry);
  }
  CHECK(kit::classify_http_response(answer(429), remote_write(false)).outcome ==
        Outcome::kRejected);
  CHECK(kit::classify_http_response(answer(429), remote_write(true)).outcome == Outcome::kRetry);
  CHECK(kit::classify_http_response(answer(400), remote_write(true)).outcome == Outcome::kRejected);
  CHECK(kit::http_status_retried(500, remote_write(false)));
  CHECK_FALSE(kit::http_status_retried(500, kit::HttpRetryPolicy{}));
}

TEST_CASE("a retried status honours Retry-After, in seconds or as a date") {
  const kit::SendResult seconds = kit::classify_http_response(answer(503, "busy", "7"));
  CHECK(seconds.outcome == Outcome::kRetry);
  CHECK(seconds.message == "HTTP 503: busy");
  REQUIRE(seconds.retry_after);
  CHECK(*seconds.retry_after == std::chrono::seconds(7));
  const kit::SendResult past =
      kit::classify_http_response(answer(429, "", "Wed, 21 Oct 2015 07:28:00 GMT"));
  REQUIRE(past.retry_after);
  CHECK(*past.retry_after == std::chrono::milliseconds(0));
  CHECK_FALSE(kit::classify_http_response(answer(503, "", "soon")).retry_after);
  CHECK_FALSE(kit::classify_http_response(answer(503)).retry_after);
  // A rejected status has no delay, whatever it says.
  CHECK_FALSE(kit::classify_http_response(answer(400, "", "7")).retry_after);
}

TEST_CASE("any other status is rejected as HTTP <status>: <the receiver's answer>") {
  const kit::SendResult result =
      kit::classify_http_response(answer(400, "out of order sample\n"), remote_write(false));
  CHECK(result.outcome == Outcome::kRejected);
  CHECK(result.message == "HTTP 400: out of order sample");
  CHECK(kit::classify_http_response(answer(401)).message == "HTTP 401");
  CHECK(kit::classify_http_response(answer(413, std::string(500, 'x'))).message ==
        "HTTP 413: " + std::string(kit::kResponseSnippetBytes, 'x'));
}

TEST_CASE("a receiver's answer is quoted printable, bounded, without its line break") {
  CHECK(kit::response_snippet("out of order sample\n") == "out of order sample");
  CHECK(kit::response_snippet("a\x01"
                              "b") == "a.b");
  CHECK(kit::response_snippet("a\r\nInjected: 1") == "a..Injected: 1");
  CHECK(kit::response_snippet(std::string(500, 'x')).size() == kit::kResponseSnippetBytes);
}
