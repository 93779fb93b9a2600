/*
 * tokenspeed/kit/grpc.hpp — a unary gRPC call carried by the kit's HTTP
 * client (http_client.hpp with HttpClientOptions::http2): the message
 * framing of the request and response bodies, the grpc-status,
 * grpc-message and grpc-status-details-bin the client keeps from the
 * trailers (or a trailers-only answer), and what a status means for the
 * delivery loop under the OTLP/gRPC rule:
 *
 *   std::string body;
 *   kit::grpc_frame(message, false, body);        // 0, 4-byte length, message
 *   headers: kit::grpc_request_headers(gzip, timeout)  // content-type, te, grpc-encoding,
 *                                                      // grpc-timeout
 *   POST to <endpoint>/<package.Service>/<Method>
 *   const kit::SendResult result = kit::classify_grpc_response(response);
 *
 * Retried (the OTLP specification's table): CANCELLED, DEADLINE_EXCEEDED,
 * ABORTED, OUT_OF_RANGE, UNAVAILABLE, DATA_LOSS, and RESOURCE_EXHAUSTED only
 * when the server says when to come back (a google.rpc.RetryInfo in
 * grpc-status-details-bin, whose delay is honoured); every other status is
 * a refusal. Header-only C++17; needs libcurl (http_client.hpp). Never used
 * on the event path, never logs.
 */
#ifndef TOKENSPEED_KIT_GRPC_HPP
#define TOKENSPEED_KIT_GRPC_HPP

#include <tokenspeed/kit/backoff.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/http_response.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

/* The gRPC status codes (grpc/doc/statuscodes.md). */
enum class GrpcCode : int {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
  kUnauthenticated = 16,
};

/* The name of a status code ("UNAVAILABLE"), "CODE_<n>" for an unknown one. */
inline std::string grpc_code_name(int code) {
  static constexpr const char* kNames[] = {"OK",
                                           "CANCELLED",
                                           "UNKNOWN",
                                           "INVALID_ARGUMENT",
                                           "DEADLINE_EXCEEDED",
                                           "NOT_FOUND",
                                           "ALREADY_EXISTS",
                                           "PERMISSION_DENIED",
                                           "RESOURCE_EXHAUSTED",
                                           "FAILED_PRECONDITION",
                                           "ABORTED",
                                           "OUT_OF_RANGE",
                                           "UNIMPLEMENTED",
                                           "INTERNAL",
                                           "UNAVAILABLE",
                                           "DATA_LOSS",
                                           "UNAUTHENTICATED"};
  if (code >= 0 && code <= 16) return kNames[code];
  return "CODE_" + std::to_string(code);
}

/* The headers of a unary gRPC request ("Name: value"): its content type,
 * the trailers it waits for, and with gzip the encoding of its message
 * (framed with the compressed flag, grpc_frame). */
inline std::vector<std::string> grpc_request_headers(bool gzip) {
  std::vector<std::string> headers{"content-type: application/grpc", "te: trailers"};
  if (gzip) headers.emplace_back("grpc-encoding: gzip");
  return headers;
}

/* Why a request header (metadata) name is not the operator's to set on a
 * gRPC call, or "" when it is. The call's own: content-type, te,
 * grpc-timeout (its deadline) and grpc-encoding (its compression); every
 * other grpc-* name, reserved to gRPC (grpc-accept-encoding, and the
 * answer's grpc-status and grpc-message among them); HTTP/2's
 * pseudo-headers (":path"); and the connection-specific headers HTTP/2
 * forbids (connection, keep-alive, proxy-connection, transfer-encoding,
 * upgrade). Any of them sent twice or changed fails every call. Compared
 * without case. user-agent stays the operator's: gRPC clients send an
 * application's as the prefix of their own, and this client sends none. */
inline std::string_view grpc_reserved_header(std::string_view name) noexcept {
  const auto lower = [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  };
  const auto starts = [&](std::string_view prefix) {
    return name.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), name.begin(),
                      [&](char a, char b) { return a == lower(b); });
  };
  const auto is = [&](std::string_view other) {
    return name.size() == other.size() && starts(other);
  };
  if (is("content-type")) return "the call sends content-type: application/grpc";
  if (is("te")) return "the call sends te: trailers";
  if (is("grpc-timeout")) return "the call sends its deadline in it, from timeout_ms";
  if (is("grpc-encoding")) return "the call sends its message's compression in it";
  if (starts("grpc-")) return "names starting with grpc- are reserved to gRPC";
  if (starts(":")) return "a pseudo-header of HTTP/2, set by the call";
  for (const char* connection :
       {"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"}) {
    if (is(connection)) return "HTTP/2 forbids connection-specific headers";
  }
  return {};
}

/* Checks that url (already an http:// or https:// URL: check_http_url) is
 * a gRPC target: the receiver's address, nothing after it but one '/' (no
 * path: the call's is added; no query or fragment: a call carries neither,
 * and either would end up before the call's path). Throws
 * std::invalid_argument starting with what ("'endpoint'"); never quotes
 * url (a query may hold a token). */
inline void check_grpc_endpoint(const std::string& what, std::string_view url) {
  const std::size_t scheme = url.find("://");
  std::string_view rest = url.substr(scheme == std::string_view::npos ? 0 : scheme + 3);
  rest.remove_prefix(std::min(rest.size(), rest.find_first_of("/?#")));
  const std::size_t query = rest.find('?');
  const std::size_t fragment = rest.find('#');
  const char* example = " (e.g. \"http://127.0.0.1:4317\")";
  if (query != std::string_view::npos && query < fragment) {
    throw std::invalid_argument(what + ": with protocol grpc, give the receiver's address " +
                                "without a query ('?...'): a gRPC call carries none" + example);
  }
  if (fragment != std::string_view::npos) {
    throw std::invalid_argument(what + ": with protocol grpc, give the receiver's address " +
                                "without a fragment ('#...'): a gRPC call carries none" + example);
  }
  if (!rest.empty() && rest != "/") {
    throw std::invalid_argument(what + ": with protocol grpc, give the receiver's address " +
                                "without a path" + example + "; the call's path is added");
  }
}

/* A grpc-timeout value: at most 8 digits and a unit (gRPC's PROTOCOL-HTTP2),
 * in milliseconds while they fit, else in the first coarser unit that holds
 * them (rounded up, so the server never gives up before the client). */
inline std::string grpc_timeout_value(std::chrono::milliseconds timeout) {
  constexpr int64_t kMaxValue = 99999999;
  const auto up = [](int64_t value, int64_t factor) {
    return value / factor + (value % factor != 0);
  };
  const int64_t ms = std::max<int64_t>(timeout.count(), 0);
  if (ms <= kMaxValue) return std::to_string(ms) + "m";
  const int64_t seconds = up(ms, 1000);
  if (seconds <= kMaxValue) return std::to_string(seconds) + "S";
  const int64_t minutes = up(seconds, 60);
  if (minutes <= kMaxValue) return std::to_string(minutes) + "M";
  return std::to_string(std::min(up(minutes, 60), kMaxValue)) + "H";
}

/* The same, with the call's deadline as grpc-timeout: the server stops
 * working on a call its client no longer waits for. */
inline std::vector<std::string> grpc_request_headers(bool gzip, std::chrono::milliseconds timeout) {
  std::vector<std::string> headers = grpc_request_headers(gzip);
  headers.push_back("grpc-timeout: " + grpc_timeout_value(timeout));
  return headers;
}

/* Writes the length-prefixed message of a gRPC body into out (cleared
 * first): the compressed flag (1 when message is compressed with the
 * request's grpc-encoding), the length as 4 bytes big-endian, the message.
 * Throws std::length_error for a message of 4 GiB or more. */
inline void grpc_frame(std::string_view message, bool compressed, std::string& out) {
  if (message.size() > UINT32_MAX) throw std::length_error("gRPC message of 4 GiB or more");
  const auto length = static_cast<uint32_t>(message.size());
  out.clear();
  out.reserve(5 + message.size());
  out.push_back(compressed ? '\1' : '\0');
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((length >> shift) & 0xffu));
  out.append(message);
}

/* Reads the first length-prefixed message of a gRPC body into message
 * (cleared first) and whether it is compressed. Returns "" or why not
 * (a body shorter than its prefix says). */
inline std::string grpc_unframe(std::string_view body, std::string& message,
                                bool* compressed = nullptr) {
  message.clear();
  if (body.size() < 5)
    return "a gRPC message needs 5 bytes of prefix, got " + std::to_string(body.size());
  const auto byte = [&](std::size_t i) { return static_cast<uint8_t>(body[i]); };
  if (byte(0) > 1) return "bad gRPC compressed flag " + std::to_string(byte(0));
  const uint32_t length = (uint32_t{byte(1)} << 24) | (uint32_t{byte(2)} << 16) |
                          (uint32_t{byte(3)} << 8) | uint32_t{byte(4)};
  if (body.size() - 5 < length) {
    return "a gRPC message of " + std::to_string(length) + " bytes, only " +
           std::to_string(body.size() - 5) + " received";
  }
  if (compressed != nullptr) *compressed = byte(0) == 1;
  message.assign(body.substr(5, length));
  return {};
}

/* grpc-message as sent: percent-encoded UTF-8 ("%XX"); a '%' not followed
 * by two hex digits is kept as it is. */
inline std::string grpc_percent_decode(std::string_view text) {
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size() && hex(text[i + 1]) >= 0 && hex(text[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(text[i + 1]) * 16 + hex(text[i + 2])));
      i += 2;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

/* Decodes base64 (the standard alphabet, padding optional, as gRPC's -bin
 * metadata is sent) into out (cleared first); false on any other byte. */
inline bool grpc_base64_decode(std::string_view text, std::string& out) {
  out.clear();
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+') {
      value = 62;
    } else if (c == '/') {
      value = 63;
    } else {
      return false;
    }
    bits = (bits << 6) | static_cast<uint32_t>(value);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<char>((bits >> count) & 0xffu));
    }
  }
  return true;
}

namespace detail {

/* Just enough of the protobuf wire format to read google.rpc.Status. */
struct ProtoFields {
  std::string_view data;

  bool varint(uint64_t& value) noexcept {
    value = 0;
    for (int shift = 0; shift < 64 && !data.empty(); shift += 7) {
      const auto byte = static_cast<uint8_t>(data.front());
      data.remove_prefix(1);
      value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80u) == 0) return true;
    }
    return false;
  }

  /* The next field: its number, and its value (varint) or bytes
   * (length-delimited); fixed-width fields are skipped over. false at the
   * end or on malformed input. */
  bool next(uint64_t& number, uint64_t& value, std::string_view& bytes) noexcept {
    uint64_t key = 0;
    if (data.empty() || !varint(key)) return false;
    number = key >> 3;
    bytes = {};
    value = 0;
    switch (key & 7u) {
      case 0:
        return varint(value);
      case 1:
        if (data.size() < 8) return false;
        data.remove_prefix(8);
        return true;
      case 2:
        if (!varint(value) || value > data.size()) return false;
        bytes = data.substr(0, static_cast<std::size_t>(value));
        data.remove_prefix(static_cast<std::size_t>(value));
        return true;
      case 5:
        if (data.size() < 4) return false;
        data.remove_prefix(4);
        return true;
      default:
        return false;
    }
  }
};

}  // namespace detail

/* The retry delay a server asks for in grpc-status-details-bin (the base64
 * of a google.rpc.Status whose details hold a google.rpc.RetryInfo):
 * nullopt when there is no RetryInfo (or the value is malformed), its
 * retry_delay otherwise (0 when it has none). */
inline std::optional<std::chrono::milliseconds> grpc_retry_info_delay(
    std::string_view details_bin) {
  std::string status;
  if (!grpc_base64_decode(details_bin, status)) return std::nullopt;
  detail::ProtoFields fields{status};
  uint64_t number = 0, value = 0;
  std::string_view bytes;
  while (fields.next(number, value, bytes)) {
    if (number != 3) continue;  // Status.details: repeated google.protobuf.Any
    detail::ProtoFields any{bytes};
    std::string_view type_url, any_value;
    while (any.next(number, value, bytes)) {
      if (number == 1) type_url = bytes;
      if (number == 2) any_value = bytes;
    }
    const std::string_view kRetryInfo = "/google.rpc.RetryInfo";
    if (type_url.size() < kRetryInfo.size() ||
        type_url.substr(type_url.size() - kRetryInfo.size()) != kRetryInfo)
      continue;
    int64_t seconds = 0, nanos = 0;
    detail::ProtoFields retry_info{any_value};
    while (retry_info.next(number, value, bytes)) {
      if (number != 1) continue;  // RetryInfo.retry_delay: google.protobuf.Duration
      detail::ProtoFields duration{bytes};
      while (duration.next(number, value, bytes)) {
        if (number == 1) seconds = static_cast<int64_t>(value);
        if (number == 2) nanos = static_cast<int64_t>(value);
      }
    }
    if (seconds < 0 || nanos < 0) return std::chrono::milliseconds(0);
    // Longer than any delay the delivery loop honours (it caps it).
    if (seconds > 86400) seconds = 86400;
    return std::chrono::milliseconds(seconds * 1000 + (nanos + 999999) / 1000000);
  }
  return std::nullopt;
}

/* The gRPC status of an HTTP answer without grpc-status (a proxy's, or a
 * server that is not gRPC's), as gRPC clients map it
 * (grpc/doc/http-grpc-status-mapping.md). */
inline GrpcCode grpc_code_of_http_status(long status) noexcept {
  switch (status) {
    case 400:
      return GrpcCode::kInternal;
    case 401:
      return GrpcCode::kUnauthenticated;
    case 403:
      return GrpcCode::kPermissionDenied;
    case 404:
      return GrpcCode::kUnimplemented;
    case 429:
    case 502:
    case 503:
    case 504:
      return GrpcCode::kUnavailable;
    default:
      return GrpcCode::kUnknown;
  }
}

/* true when the OTLP/gRPC rule retries code; RESOURCE_EXHAUSTED only when
 * the server sent a RetryInfo (retry_info). */
inline bool grpc_code_retried(int code, bool retry_info) noexcept {
  switch (static_cast<GrpcCode>(code)) {
    case GrpcCode::kCancelled:
    case GrpcCode::kDeadlineExceeded:
    case GrpcCode::kAborted:
    case GrpcCode::kOutOfRange:
    case GrpcCode::kUnavailable:
    case GrpcCode::kDataLoss:
      return true;
    case GrpcCode::kResourceExhausted:
      return retry_info;
    default:
      return false;
  }
}

/* The SendResult of one gRPC call's answer:
 *  - no answer (status 0): retried, as classify_http_response does;
 *  - grpc-status 0: delivered;
 *  - another grpc-status: "gRPC <NAME> (<code>): <grpc-message>", retried
 *    when grpc_code_retried says so (with the RetryInfo's delay), else
 *    rejected;
 *  - no grpc-status: an HTTP status other than 200 is mapped by
 *    grpc_code_of_http_status ("HTTP <status> (gRPC <NAME>): <answer>",
 *    UNAVAILABLE retried honouring Retry-After); a 200 without one is a
 *    broken answer, rejected (gRPC's INTERNAL). */
inline SendResult classify_grpc_response(const HttpResponse& response) {
  if (response.status == 0) {
    if (response.stopped) return SendResult::retry("interrupted by close");
    return SendResult::retry(response.error);
  }
  if (!response.grpc_status) {
    if (response.status == 200) {
      return SendResult::rejected("HTTP 200 without a grpc-status (gRPC " +
                                  grpc_code_name(static_cast<int>(GrpcCode::kInternal)) + ")");
    }
    const int code = static_cast<int>(grpc_code_of_http_status(response.status));
    std::string why =
        "HTTP " + std::to_string(response.status) + " (gRPC " + grpc_code_name(code) + ")";
    const std::string answer = response_snippet(response.body);
    if (!answer.empty()) why += ": " + answer;
    if (!grpc_code_retried(code, false)) return SendResult::rejected(std::move(why));
    std::optional<std::chrono::milliseconds> after;
    if (response.retry_after) after = parse_retry_after(*response.retry_after);
    return SendResult::retry(std::move(why), after);
  }
  const std::string& text = *response.grpc_status;
  int code = 0;
  bool numeric = !text.empty() && text.size() <= 9;
  for (const char c : text) {
    numeric = numeric && c >= '0' && c <= '9';
    if (numeric) code = code * 10 + (c - '0');
  }
  if (!numeric) {
    return SendResult::rejected("grpc-status \"" + response_snippet(text) +
                                "\" is not a status code");
  }
  if (code == 0) return SendResult::delivered();
  std::string why = "gRPC " + grpc_code_name(code) + " (" + std::to_string(code) + ")";
  const std::string message = response_snippet(grpc_percent_decode(response.grpc_message));
  if (!message.empty()) why += ": " + message;
  std::optional<std::chrono::milliseconds> after;
  if (!response.grpc_status_details.empty())
    after = grpc_retry_info_delay(response.grpc_status_details);
  if (!grpc_code_retried(code, after.has_value())) return SendResult::rejected(std::move(why));
  if (after && after->count() == 0) after.reset();  // no delay given: the backoff's
  return SendResult::retry(std::move(why), after);
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_GRPC_HPP
