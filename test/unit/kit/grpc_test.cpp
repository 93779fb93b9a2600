// grpc_test.cpp — a unary gRPC call over the kit's HTTP client: the message
// framing both ways, grpc-message's percent-encoding, the RetryInfo of
// grpc-status-details-bin, and what a status means for the delivery loop
// under the OTLP/gRPC rule (retryable codes retried, RESOURCE_EXHAUSTED only
// with a RetryInfo, every other code a refusal quoting grpc-message; no
// grpc-status: the HTTP status mapped as gRPC clients map it).
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <tokenspeed/kit/grpc.hpp>
#include <tokenspeed/kit/http_exporter.hpp>

namespace kit = tokenspeed::metrics::kit;
using Outcome = kit::SendResult::Outcome;
using std::chrono::milliseconds;

namespace {

// google.rpc.Status{code 8, "slow down", details [ErrorInfo{"QUOTA"},
// RetryInfo{retry_delay {seconds 2, nanos 500000000}}]}, base64 unpadded.
constexpr const char* kRetryInfo25 =
    "CAgSCXNsb3cgZG93bhozCih0eXBlLmdvb2dsZWFwaXMuY29tL2dvb2dsZS5ycGMuRXJyb3JJbmZvEgcKBVFVT1RBGjYK"
    "KHR5cGUuZ29vZ2xlYXBpcy5jb20vZ29vZ2xlLnJwYy5SZXRyeUluZm8SCgoICAIQgMq17gE";
// google.rpc.Status{code 8, "quota", details [ErrorInfo{"QUOTA"}]}: no RetryInfo.
constexpr const char* kNoRetryInfo =
    "CAgSBXF1b3RhGjMKKHR5cGUuZ29vZ2xlYXBpcy5jb20vZ29vZ2xlLnJwYy5FcnJvckluZm8SBwoFUVVPVEE";
// google.rpc.Status{code 8, details [RetryInfo{}]}: no delay given, padded.
constexpr const char* kRetryInfoNoDelay =
    "CAgaLAoodHlwZS5nb29nbGVhcGlzLmNvbS9nb29nbGUucnBjLlJldHJ5SW5mbxIA";

kit::HttpResponse grpc_answer(std::string status, std::string message = {},
                              std::string details = {}) {
  kit::HttpResponse response;
  response.status = 200;
  response.content_type = "application/grpc";
  response.grpc_status = std::move(status);
  response.grpc_message = std::move(message);
  response.grpc_status_details = std::move(details);
  return response;
}

}  // namespace

TEST_CASE("a gRPC message is framed with its compressed flag and a big-endian length") {
  std::string framed;
  kit::grpc_frame("abc", false, framed);
  CHECK(framed == std::string("\0\0\0\0\3abc", 8));
  kit::grpc_frame(std::string(0x010203, 'x'), true, framed);
  CHECK(framed.substr(0, 5) == std::string("\1\0\1\2\3", 5));
  CHECK(framed.size() == 5 + 0x010203);
  kit::grpc_frame("", false, framed);
  CHECK(framed == std::string(5, '\0'));
}

TEST_CASE("a framed gRPC message is read back, and a short or malformed one refused") {
  std::string framed, message;
  kit::grpc_frame("hello", true, framed);
  bool compressed = false;
  CHECK(kit::grpc_unframe(framed, message, &compressed).empty());
  CHECK(message == "hello");
  CHECK(compressed);
  CHECK(kit::grpc_unframe(framed + "trailing", message).empty());
  CHECK(message == "hello");
  CHECK_FALSE(kit::grpc_unframe(framed.substr(0, 7), message).empty());
  CHECK(message.empty());
  CHECK_FALSE(kit::grpc_unframe(std::string("\0\0\0", 3), message).empty());
  CHECK_FALSE(kit::grpc_unframe(std::string("\2\0\0\0\0", 5), message).empty());
}

TEST_CASE("the request headers are gRPC's, with grpc-encoding when gzip") {
  CHECK(kit::grpc_request_headers(false) ==
        std::vector<std::string>{"content-type: application/grpc", "te: trailers"});
  CHECK(kit::grpc_request_headers(true).back() == "grpc-encoding: gzip");
}

TEST_CASE("the call's timeout is its grpc-timeout, in 8 digits at most, never shorter") {
  using std::chrono::milliseconds;
  CHECK(kit::grpc_request_headers(true, milliseconds(10000)).back() == "grpc-timeout: 10000m");
  CHECK(kit::grpc_timeout_value(milliseconds(0)) == "0m");
  CHECK(kit::grpc_timeout_value(milliseconds(99999999)) == "99999999m");
  CHECK(kit::grpc_timeout_value(milliseconds(100000000)) == "100000S");
  CHECK(kit::grpc_timeout_value(milliseconds(100000001)) == "100001S");  // rounded up
  CHECK(kit::grpc_timeout_value(milliseconds(int64_t{600000000000})) == "10000000M");
  CHECK(kit::grpc_timeout_value(milliseconds::max()) == "99999999H");
}

TEST_CASE(
    "every header gRPC owns is named with why, in any case; user-agent stays the operator's") {
  const char* const owned[] = {"content-type",
                               "Content-Type",
                               "te",
                               "TE",
                               "grpc-encoding",
                               "grpc-timeout",
                               "grpc-accept-encoding",
                               "grpc-status",
                               "grpc-message",
                               "grpc-status-details-bin",
                               "GRPC-Message-Type",
                               ":path",
                               ":authority",
                               ":method",
                               ":scheme",
                               "connection",
                               "keep-alive",
                               "proxy-connection",
                               "Transfer-Encoding",
                               "upgrade"};
  for (const char* name : owned) {
    CAPTURE(name);
    CHECK_FALSE(kit::grpc_reserved_header(name).empty());
  }
  CHECK(kit::grpc_reserved_header("grpc-timeout") ==
        "the call sends its deadline in it, from timeout_ms");
  CHECK(kit::grpc_reserved_header("grpc-status") ==
        "names starting with grpc- are reserved to gRPC");
  for (const char* name : {"user-agent", "api-key", "authorization", "x-grpc-tenant", "tea", "grpc",
                           "content-encoding", "host", "trace-bin"}) {
    CAPTURE(name);
    CHECK(kit::grpc_reserved_header(name).empty());
  }
}

namespace {

// The message of check_grpc_endpoint's refusal of url, or "accepted".
std::string endpoint_refusal(const std::string& url) {
  try {
    kit::check_grpc_endpoint("'endpoint'", url);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("a gRPC endpoint is an address: a path, a query or a fragment is refused, unquoted") {
  CHECK(endpoint_refusal("http://127.0.0.1:4317") == "accepted");
  CHECK(endpoint_refusal("https://collector.example:4317/") == "accepted");
  CHECK(endpoint_refusal("http://[::1]:4317") == "accepted");
  CHECK(endpoint_refusal("http://c:4317/v1/metrics") ==
        "'endpoint': with protocol grpc, give the receiver's address without a path (e.g. "
        "\"http://127.0.0.1:4317\"); the call's path is added");
  for (const char* url : {"http://c:4317?token=S3CRET", "http://c:4317/?token=S3CRET",
                          "http://c:4317/v1?token=S3CRET"}) {
    CAPTURE(url);
    CHECK(endpoint_refusal(url) ==
          "'endpoint': with protocol grpc, give the receiver's address without a query "
          "('?...'): a gRPC call carries none (e.g. \"http://127.0.0.1:4317\")");
  }
  for (const char* url : {"http://c:4317#S3CRET", "http://c:4317/#S3CRET", "http://c:4317#a?b"}) {
    CAPTURE(url);
    CHECK(endpoint_refusal(url) ==
          "'endpoint': with protocol grpc, give the receiver's address without a fragment "
          "('#...'): a gRPC call carries none (e.g. \"http://127.0.0.1:4317\")");
  }
}

TEST_CASE("grpc-message is percent-decoded, a stray percent kept") {
  CHECK(kit::grpc_percent_decode("try%20later%20%C3%A9") == "try later \xC3\xA9");
  CHECK(kit::grpc_percent_decode("100%") == "100%");
  CHECK(kit::grpc_percent_decode("%zz%4") == "%zz%4");
}

TEST_CASE("base64 of -bin metadata decodes padded or not, and refuses other bytes") {
  std::string out;
  CHECK(kit::grpc_base64_decode("aGVsbG8", out));
  CHECK(out == "hello");
  CHECK(kit::grpc_base64_decode("aGVsbG8=", out));
  CHECK(out == "hello");
  CHECK_FALSE(kit::grpc_base64_decode("aGV*bG8", out));
}

TEST_CASE("the RetryInfo delay of grpc-status-details-bin is found among the details") {
  CHECK(kit::grpc_retry_info_delay(kRetryInfo25) == std::optional<milliseconds>(2500));
  CHECK(kit::grpc_retry_info_delay(kNoRetryInfo) == std::nullopt);
  CHECK(kit::grpc_retry_info_delay(kRetryInfoNoDelay) == std::optional<milliseconds>(0));
  CHECK(kit::grpc_retry_info_delay("not base64!") == std::nullopt);
  CHECK(kit::grpc_retry_info_delay("CAgaLAoodHlw") == std::nullopt);  // cut short
}

TEST_CASE("grpc-status 0 is delivered") {
  CHECK(kit::classify_grpc_response(grpc_answer("0", "OK")).outcome == Outcome::kDelivered);
}

TEST_CASE("the OTLP/gRPC retryable codes are retried, naming the code and the message") {
  for (const int code : {1, 4, 10, 11, 14, 15}) {
    const kit::SendResult result =
        kit::classify_grpc_response(grpc_answer(std::to_string(code), "try%20later"));
    CHECK(result.outcome == Outcome::kRetry);
    CHECK(result.message ==
          "gRPC " + kit::grpc_code_name(code) + " (" + std::to_string(code) + "): try later");
    CHECK_FALSE(result.retry_after);
  }
  CHECK(kit::classify_grpc_response(grpc_answer("14")).message == "gRPC UNAVAILABLE (14)");
}

TEST_CASE("RESOURCE_EXHAUSTED is retried only with a RetryInfo, after its delay") {
  const kit::SendResult with = kit::classify_grpc_response(grpc_answer("8", "", kRetryInfo25));
  CHECK(with.outcome == Outcome::kRetry);
  CHECK(with.retry_after == std::optional<milliseconds>(2500));
  const kit::SendResult no_delay =
      kit::classify_grpc_response(grpc_answer("8", "", kRetryInfoNoDelay));
  CHECK(no_delay.outcome == Outcome::kRetry);
  CHECK_FALSE(no_delay.retry_after);
  CHECK(kit::classify_grpc_response(grpc_answer("8", "quota", kNoRetryInfo)).outcome ==
        Outcome::kRejected);
  CHECK(kit::classify_grpc_response(grpc_answer("8")).outcome == Outcome::kRejected);
}

TEST_CASE("every other gRPC code is a refusal quoting grpc-message") {
  for (const int code : {2, 3, 5, 6, 7, 9, 12, 13, 16, 17}) {
    const kit::SendResult result =
        kit::classify_grpc_response(grpc_answer(std::to_string(code), "bad%0Arequest"));
    CHECK(result.outcome == Outcome::kRejected);
    CHECK(result.message ==
          "gRPC " + kit::grpc_code_name(code) + " (" + std::to_string(code) + "): bad.request");
  }
  CHECK(kit::grpc_code_name(17) == "CODE_17");
  CHECK(kit::classify_grpc_response(grpc_answer("x1")).outcome == Outcome::kRejected);
}

TEST_CASE("no answer is retried like an HTTP one") {
  kit::HttpResponse refused;
  refused.error = "Couldn't connect to server";
  const kit::SendResult result = kit::classify_grpc_response(refused);
  CHECK(result.outcome == Outcome::kRetry);
  CHECK(result.message == "Couldn't connect to server");
  kit::HttpResponse stopped;
  stopped.stopped = true;
  CHECK(kit::classify_grpc_response(stopped).message == "interrupted by close");
}

TEST_CASE("an answer without grpc-status is judged by its HTTP status as gRPC clients map it") {
  kit::HttpResponse proxy;
  proxy.status = 503;
  proxy.body = "upstream down";
  proxy.retry_after = "3";
  const kit::SendResult unavailable = kit::classify_grpc_response(proxy);
  CHECK(unavailable.outcome == Outcome::kRetry);
  CHECK(unavailable.message == "HTTP 503 (gRPC UNAVAILABLE): upstream down");
  CHECK(unavailable.retry_after == std::optional<milliseconds>(3000));
  proxy.status = 404;
  proxy.body.clear();
  const kit::SendResult unimplemented = kit::classify_grpc_response(proxy);
  CHECK(unimplemented.outcome == Outcome::kRejected);
  CHECK(unimplemented.message == "HTTP 404 (gRPC UNIMPLEMENTED)");
  proxy.status = 200;
  CHECK(kit::classify_grpc_response(proxy).outcome == Outcome::kRejected);
  CHECK(kit::grpc_code_of_http_status(401) == kit::GrpcCode::kUnauthenticated);
  CHECK(kit::grpc_code_of_http_status(500) == kit::GrpcCode::kUnknown);
}

TEST_CASE("the HTTP retry policy's grpc flag is off by default") {
  CHECK_FALSE(kit::HttpRetryPolicy{}.grpc);
}
