/*
 * tokenspeed/kit/sigv4.hpp — AWS Signature Version 4 of an HTTP request, for
 * an HTTP exporter whose receiver is an AWS service (Amazon Managed Service
 * for Prometheus' remote write, an OTLP endpoint of AWS): the canonical
 * request, the string to sign, the derived signing key and the
 * Authorization header, as AWS's "Signature Version 4 signing process"
 * gives them; and where the credentials come from (files named by the
 * settings, the AWS_* environment, a profile of the shared credentials
 * file), read again as the kit reads every credential file.
 *
 *   kit::SigV4Options sigv4;
 *   sigv4.region = "eu-west-1";                      // service: "aps" by default
 *   const kit::SigV4Signer signer(sigv4);             // the environment read now
 *   std::string problem = signer.check();            // "" or why no credentials
 *   problem = signer.sign("POST", url, body, headers);  // adds X-Amz-*, Authorization
 *
 * A role assumed through STS (sigv4.role_arn), whose temporary credentials
 * sign instead: sts_assume_role.hpp.
 *
 * SHA-256 and HMAC-SHA256 are OpenSSL's (libcrypto 3, through EVP and
 * HMAC()): no cryptography of our own. Header-only C++17; link libcrypto.
 * Never logs; no message it returns quotes a secret (only the setting, the
 * variable's name or the file's path). Never used on the event path.
 */
#ifndef TOKENSPEED_KIT_SIGV4_HPP
#define TOKENSPEED_KIT_SIGV4_HPP

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/settings.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

/* One set of AWS credentials. The secret and the token are wiped by
 * forget() (and the destructor) before their memory is freed. */
struct SigV4Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty: long-term keys (no X-Amz-Security-Token)

  SigV4Credentials() = default;
  SigV4Credentials(const SigV4Credentials&) = default;
  SigV4Credentials& operator=(const SigV4Credentials&) = default;
  ~SigV4Credentials() { forget(); }

  void forget() noexcept {
    for (std::string* text : {&access_key_id, &secret_access_key, &session_token}) {
      volatile char* bytes = text->data();
      for (std::size_t i = 0; i < text->size(); ++i) bytes[i] = '\0';
      text->clear();
    }
  }
};

/* One request as it is signed: the method, the path and query as sent
 * (percent-encoded, the query without '?'), every header signed (name,
 * value; host and x-amz-date among them) and the hex SHA-256 of the body. */
struct SigV4Request {
  std::string_view method;
  std::string_view path;
  std::string_view query;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string payload_hash;
};

/* What a signature is made of, each step kept for the tests. */
struct SigV4Signature {
  std::string canonical_request;
  std::string string_to_sign;
  std::string scope;           // 20150830/us-east-1/service/aws4_request
  std::string signed_headers;  // host;x-amz-date
  std::string signature;       // hex
  std::string authorization;   // the Authorization header's value
};

namespace detail {

inline std::string to_hex(const unsigned char* bytes, std::size_t size) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (std::size_t i = 0; i < size; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xf];
  }
  return out;
}

inline void wipe(std::string& text) noexcept {
  volatile char* bytes = text.data();
  for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = '\0';
  text.clear();
}

/* RFC 3986's unreserved characters stay; every other byte is %XX (upper
 * case hex), '/' too: one segment or one query name or value. */
inline std::string sigv4_encode(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '.' || c == '_' || c == '~') {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    }
  }
  return out;
}

inline int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A query name or value decoded: %XX to its byte, '+' to a space (as the
 * receivers' form decoding reads it); a '%' not followed by two hex digits
 * stays. */
inline std::string query_decode(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out += ' ';
    } else if (text[i] == '%' && i + 2 < text.size() && hex_digit(text[i + 1]) >= 0 &&
               hex_digit(text[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(text[i + 1]) * 16 + hex_digit(text[i + 2]));
      i += 2;
    } else {
      out += text[i];
    }
  }
  return out;
}

inline bool is_space(char c) noexcept { return c == ' ' || c == '\t'; }

/* A header value as signed: leading and trailing blanks dropped, every run
 * of blanks inside written as one space. */
inline std::string canonical_header_value(std::string_view value) {
  std::string out;
  bool blank = false;
  for (const char c : value) {
    if (is_space(c)) {
      blank = !out.empty();
      continue;
    }
    if (blank) out += ' ';
    blank = false;
    out += c;
  }
  return out;
}

inline std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

/* Headers never signed: libcurl or a proxy may change or drop them. */
inline bool unsigned_header(std::string_view lowercase_name) noexcept {
  for (const std::string_view name : {"authorization", "user-agent", "expect", "connection",
                                      "x-amzn-trace-id", "content-length", "transfer-encoding"}) {
    if (lowercase_name == name) return true;
  }
  return false;
}

/* The host and port a request to url goes to, as libcurl writes the Host
 * header: the port only when the URL gives one other than the scheme's. */
inline std::string host_header_of(std::string_view url) {
  const bool https = url.rfind("https://", 0) == 0;
  std::string_view authority = detail::url_authority(url);
  const std::size_t at = authority.rfind('@');
  if (at != std::string_view::npos) authority.remove_prefix(at + 1);
  const std::size_t bracket = authority.rfind(']');
  const std::size_t colon = authority.rfind(':');
  if (colon != std::string_view::npos && (bracket == std::string_view::npos || colon > bracket)) {
    const std::string_view port = authority.substr(colon + 1);
    if (port.empty() || port == (https ? "443" : "80")) return lower(authority.substr(0, colon));
  }
  return lower(authority);
}

}  // namespace detail

/* The hex SHA-256 of data (OpenSSL's EVP). */
inline std::string sigv4_sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &size, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("SHA-256 failed (libcrypto)");
  return detail::to_hex(digest, size);
}

/* HMAC-SHA256 of data under key, raw bytes (OpenSSL's HMAC()). */
inline std::string sigv4_hmac(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac, &size) == nullptr)
    throw std::runtime_error("HMAC-SHA256 failed (libcrypto)");
  return std::string(reinterpret_cast<const char*>(mac), size);
}

/* The signing key of a day (YYYYMMDD), region and service: HMAC chained
 * from "AWS4" + the secret through the date, region, service and
 * "aws4_request". Raw bytes; the caller wipes it. */
inline std::string sigv4_signing_key(std::string_view secret_access_key, std::string_view date,
                                     std::string_view region, std::string_view service) {
  std::string key = "AWS4" + std::string(secret_access_key);
  std::string date_key = sigv4_hmac(key, date);
  detail::wipe(key);
  std::string region_key = sigv4_hmac(date_key, region);
  detail::wipe(date_key);
  std::string service_key = sigv4_hmac(region_key, service);
  detail::wipe(region_key);
  std::string signing_key = sigv4_hmac(service_key, "aws4_request");
  detail::wipe(service_key);
  return signing_key;
}

/* The canonical URI of a path as sent (already percent-encoded once): runs
 * of '/' made one, "." and ".." segments resolved, every segment encoded
 * again (AWS encodes the path twice for every service but S3); "/" for an
 * empty path. */
inline std::string sigv4_canonical_path(std::string_view path) {
  if (path.empty() || path == "/") return "/";
  std::vector<std::string> segments;
  std::size_t start = 0;
  const bool trailing = path.back() == '/';
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view segment = path.substr(start, slash - start);
    start = slash + 1;
    if (segment.empty() || segment == ".") continue;
    if (segment == "..") {
      if (!segments.empty()) segments.pop_back();
      continue;
    }
    segments.push_back(detail::sigv4_encode(segment));
  }
  std::string out = "/";
  for (std::size_t i = 0; i < segments.size(); ++i) {
    if (i > 0) out += '/';
    out += segments[i];
  }
  if (trailing && !segments.empty()) out += '/';
  return out;
}

/* The canonical query string: every name=value pair decoded and encoded
 * again (RFC 3986's unreserved characters only), sorted by name then value;
 * a pair with an empty name dropped, a name without '=' given an empty
 * value. */
inline std::string sigv4_canonical_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> pairs;
  std::size_t start = 0;
  while (start < query.size()) {
    const std::size_t amp = std::min(query.find('&', start), query.size());
    const std::string_view piece = query.substr(start, amp - start);
    start = amp + 1;
    if (piece.empty()) continue;
    const std::size_t equals = piece.find('=');
    std::string name = detail::sigv4_encode(detail::query_decode(piece.substr(0, equals)));
    std::string value = equals == std::string_view::npos
                            ? std::string()
                            : detail::sigv4_encode(detail::query_decode(piece.substr(equals + 1)));
    if (!name.empty()) pairs.emplace_back(std::move(name), std::move(value));
  }
  std::sort(pairs.begin(), pairs.end());
  std::string out;
  for (const auto& [name, value] : pairs) {
    if (!out.empty()) out += '&';
    out += name + "=" + value;
  }
  return out;
}

/* The date of a signature, "YYYYMMDDTHHMMSSZ" (UTC), as X-Amz-Date. */
inline std::string sigv4_amz_date(std::chrono::system_clock::time_point now) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  const std::size_t size = std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
  return std::string(text, size);
}

/* Signs request at amz_date ("YYYYMMDDTHHMMSSZ", also in its x-amz-date
 * header) for region and service. */
inline SigV4Signature sigv4_sign(const SigV4Request& request, std::string_view amz_date,
                                 std::string_view region, std::string_view service,
                                 const SigV4Credentials& credentials) {
  std::vector<std::pair<std::string, std::string>> headers;
  for (const auto& [name, value] : request.headers) {
    std::string key = detail::lower(name);
    std::string canonical = detail::canonical_header_value(value);
    auto same = std::find_if(headers.begin(), headers.end(),
                             [&](const auto& header) { return header.first == key; });
    if (same != headers.end()) {
      same->second += "," + canonical;  // a repeated header: one line, values in order
    } else {
      headers.emplace_back(std::move(key), std::move(canonical));
    }
  }
  std::stable_sort(headers.begin(), headers.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  SigV4Signature out;
  std::string canonical_headers;
  for (const auto& [name, value] : headers) {
    canonical_headers += name + ":" + value + "\n";
    if (!out.signed_headers.empty()) out.signed_headers += ';';
    out.signed_headers += name;
  }
  out.canonical_request = std::string(request.method) + "\n" + sigv4_canonical_path(request.path) +
                          "\n" + sigv4_canonical_query(request.query) + "\n" + canonical_headers +
                          "\n" + out.signed_headers + "\n" + request.payload_hash;
  const std::string_view date = amz_date.substr(0, 8);
  out.scope =
      std::string(date) + "/" + std::string(region) + "/" + std::string(service) + "/aws4_request";
  out.string_to_sign = "AWS4-HMAC-SHA256\n" + std::string(amz_date) + "\n" + out.scope + "\n" +
                       sigv4_sha256_hex(out.canonical_request);
  std::string key = sigv4_signing_key(credentials.secret_access_key, date, region, service);
  const std::string mac = sigv4_hmac(key, out.string_to_sign);
  detail::wipe(key);
  out.signature = detail::to_hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
  out.authorization = "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + out.scope +
                      ", SignedHeaders=" + out.signed_headers + ", Signature=" + out.signature;
  return out;
}

/* Signs a request to url (method, body) with credentials for region and
 * service: adds to headers ("Name: value" lines, the request's own, each
 * line with a value signed but those a proxy or libcurl may change:
 * Authorization, User-Agent, Expect, Connection, Content-Length,
 * Transfer-Encoding) a Host line when there is none, X-Amz-Date,
 * X-Amz-Content-Sha256, X-Amz-Security-Token (temporary credentials) and
 * Authorization. Every copy of a secret it made is wiped. */
inline void sigv4_sign_request_headers(
    const SigV4Credentials& credentials, std::string_view region, std::string_view service,
    std::string_view method, std::string_view url, std::string_view body,
    std::vector<std::string>& headers,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) {
  SigV4Request request;
  request.method = method;
  std::string_view rest = url.substr(std::min(url.find("://"), url.size()));
  if (rest.rfind("://", 0) == 0) rest.remove_prefix(3);
  rest = rest.substr(std::min(rest.find_first_of("/?#"), rest.size()));
  rest = rest.substr(0, rest.find('#'));
  const std::size_t question = rest.find('?');
  request.path = rest.substr(0, question);
  if (question != std::string_view::npos) request.query = rest.substr(question + 1);

  bool has_host = false;
  for (const std::string& line : headers) {
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = detail::lower(std::string_view(line).substr(0, colon));
    std::string_view value = std::string_view(line).substr(colon + 1);
    while (!value.empty() && detail::is_space(value.front())) value.remove_prefix(1);
    if (value.empty() || detail::unsigned_header(name)) continue;  // "Name:" drops a header
    has_host = has_host || name == "host";
    request.headers.emplace_back(std::move(name), std::string(value));
  }
  std::vector<std::string> added;
  if (!has_host) {
    const std::string host = detail::host_header_of(url);
    request.headers.emplace_back("host", host);
    added.push_back("Host: " + host);
  }
  const std::string amz_date = sigv4_amz_date(now);
  request.payload_hash = sigv4_sha256_hex(body);
  request.headers.emplace_back("x-amz-date", amz_date);
  request.headers.emplace_back("x-amz-content-sha256", request.payload_hash);
  added.push_back("X-Amz-Date: " + amz_date);
  added.push_back("X-Amz-Content-Sha256: " + request.payload_hash);
  if (!credentials.session_token.empty()) {
    request.headers.emplace_back("x-amz-security-token", credentials.session_token);
    added.push_back("X-Amz-Security-Token: " + credentials.session_token);
  }
  SigV4Signature signature = sigv4_sign(request, amz_date, region, service, credentials);
  added.push_back("Authorization: " + signature.authorization);
  for (auto& header : request.headers) detail::wipe(header.second);
  headers.insert(headers.end(), added.begin(), added.end());
  for (std::string& line : added) detail::wipe(line);
}

// ------------------------------------------------------------ credentials

/* What the sigv4 settings say (the kit's http_sigv4_setting rows). */
struct SigV4Options {
  std::string region;              // e.g. "eu-west-1"; empty: no signing
  std::string service = "aps";     // Amazon Managed Service for Prometheus
  std::string access_key_id_file;  // with secret_access_key_file: read at every request
  std::string secret_access_key_file;
  std::string session_token_file;  // optional, with the two above
  std::string profile;             // of the shared credentials file; "": AWS_PROFILE, default
};

/* The part of the process environment the credentials may come from, read
 * once (from_process) when a signer is made. */
struct SigV4Environment {
  std::string access_key_id;            // AWS_ACCESS_KEY_ID
  std::string secret_access_key;        // AWS_SECRET_ACCESS_KEY
  std::string session_token;            // AWS_SESSION_TOKEN
  std::string shared_credentials_file;  // AWS_SHARED_CREDENTIALS_FILE, else $HOME/.aws/credentials
  std::string profile;                  // AWS_PROFILE

  static SigV4Environment from_process() {
    const auto get = [](const char* name) {
      const char* value = std::getenv(name);
      return value == nullptr ? std::string() : std::string(value);
    };
    SigV4Environment env;
    env.access_key_id = get("AWS_ACCESS_KEY_ID");
    env.secret_access_key = get("AWS_SECRET_ACCESS_KEY");
    env.session_token = get("AWS_SESSION_TOKEN");
    env.shared_credentials_file = get("AWS_SHARED_CREDENTIALS_FILE");
    if (env.shared_credentials_file.empty() && !get("HOME").empty())
      env.shared_credentials_file = get("HOME") + "/.aws/credentials";
    env.profile = get("AWS_PROFILE");
    return env;
  }
};

/* The credentials of profile in the text of a shared credentials file (INI:
 * "[name]" sections of "key = value" lines, '#' and ';' comments):
 * aws_access_key_id, aws_secret_access_key and aws_session_token. Returns
 * "" or why not (naming the profile and the key, never a value). */
inline std::string parse_shared_credentials(std::string_view text, std::string_view profile,
                                            SigV4Credentials& out) {
  out.forget();
  bool found = false;
  bool inside = false;
  while (!text.empty()) {
    const std::size_t end = std::min(text.find('\n'), text.size());
    std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    while (!line.empty() && (detail::is_space(line.front()))) line.remove_prefix(1);
    while (!line.empty() && (detail::is_space(line.back()) || line.back() == '\r'))
      line.remove_suffix(1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      std::string_view name = line.substr(1, line.size() - 2);
      while (!name.empty() && detail::is_space(name.front())) name.remove_prefix(1);
      while (!name.empty() && detail::is_space(name.back())) name.remove_suffix(1);
      inside = name == profile;
      found = found || inside;
      continue;
    }
    if (!inside) continue;
    const std::size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    std::string_view key = line.substr(0, equals);
    std::string_view value = line.substr(equals + 1);
    while (!key.empty() && detail::is_space(key.back())) key.remove_suffix(1);
    while (!value.empty() && detail::is_space(value.front())) value.remove_prefix(1);
    const std::string name = detail::lower(key);
    if (name == "aws_access_key_id") out.access_key_id = std::string(value);
    if (name == "aws_secret_access_key") out.secret_access_key = std::string(value);
    if (name == "aws_session_token") out.session_token = std::string(value);
  }
  const std::string quoted = "profile '" + std::string(profile) + "'";
  if (!found) return "no " + quoted;
  if (out.access_key_id.empty()) return quoted + " has no aws_access_key_id";
  if (out.secret_access_key.empty()) return quoted + " has no aws_secret_access_key";
  return {};
}

/* Signs requests with the credentials of its options: files named by the
 * settings (read at every request, like every credential file of the kit),
 * else the AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN
 * environment (read when the signer is made), else a profile of the shared
 * credentials file (read at every request, so that a refreshed file is
 * used without a restart). Threading: const methods, any thread. */
class SigV4Signer {
 public:
  enum class Source { kFiles, kEnvironment, kSharedFile };

  explicit SigV4Signer(SigV4Options options,
                       SigV4Environment environment = SigV4Environment::from_process())
      : options_(std::move(options)) {
    if (!options_.access_key_id_file.empty() || !options_.secret_access_key_file.empty()) {
      source_ = Source::kFiles;
    } else if (!environment.access_key_id.empty() || !environment.secret_access_key.empty()) {
      source_ = Source::kEnvironment;
      environment_.access_key_id = environment.access_key_id;
      environment_.secret_access_key = environment.secret_access_key;
      environment_.session_token = environment.session_token;
    } else {
      source_ = Source::kSharedFile;
      shared_file_ = environment.shared_credentials_file;
      profile_ = !options_.profile.empty()      ? options_.profile
                 : !environment.profile.empty() ? environment.profile
                                                : "default";
    }
    environment.access_key_id.clear();
    detail::wipe(environment.secret_access_key);
    detail::wipe(environment.session_token);
  }

  const SigV4Options& options() const noexcept { return options_; }
  Source source() const noexcept { return source_; }

  /* Where the credentials come from, for a log line: never a secret. */
  std::string describe_source() const {
    switch (source_) {
      case Source::kFiles:
        return "'sigv4.access_key_id_file' and 'sigv4.secret_access_key_file'";
      case Source::kEnvironment:
        return "the environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)";
      case Source::kSharedFile:
        return "profile '" + profile_ + "' of " +
               (shared_file_.empty() ? std::string("the shared credentials file") : shared_file_);
    }
    return {};
  }

  /* Reads the credentials now into out; returns "" or why not, naming the
   * setting, the variable or the file, never a value. */
  std::string credentials(SigV4Credentials& out) const {
    out.forget();
    switch (source_) {
      case Source::kFiles: {
        if (options_.access_key_id_file.empty())
          return "'sigv4.secret_access_key_file' needs 'sigv4.access_key_id_file'";
        if (options_.secret_access_key_file.empty())
          return "'sigv4.access_key_id_file' needs 'sigv4.secret_access_key_file'";
        std::string problem = read_credential_file(options_.access_key_id_file, out.access_key_id);
        if (!problem.empty()) return "'sigv4.access_key_id_file': " + problem;
        problem = read_credential_file(options_.secret_access_key_file, out.secret_access_key);
        if (!problem.empty()) return "'sigv4.secret_access_key_file': " + problem;
        if (!options_.session_token_file.empty()) {
          problem = read_credential_file(options_.session_token_file, out.session_token);
          if (!problem.empty()) return "'sigv4.session_token_file': " + problem;
        }
        return {};
      }
      case Source::kEnvironment:
        if (environment_.access_key_id.empty())
          return "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not";
        if (environment_.secret_access_key.empty())
          return "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not";
        out = environment_;
        return {};
      case Source::kSharedFile: {
        if (shared_file_.empty()) {
          return "no credentials: set sigv4.access_key_id_file and sigv4.secret_access_key_file, "
                 "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_SHARED_CREDENTIALS_FILE "
                 "(HOME is not set)";
        }
        std::string text;
        std::string problem = read_secret_file(shared_file_, text);
        if (!problem.empty()) {
          return "no credentials: sigv4.access_key_id_file and AWS_ACCESS_KEY_ID are not set, "
                 "and the shared credentials file: " +
                 problem;
        }
        problem = parse_shared_credentials(text, profile_, out);
        detail::wipe(text);
        if (!problem.empty()) return shared_file_ + ": " + problem;
        return {};
      }
    }
    return "unknown credential source";
  }

  /* Reads the credentials and signs a request to url with them
   * (sigv4_sign_request_headers). Returns "" or why the request cannot be
   * signed (nothing added). */
  std::string sign(
      std::string_view method, std::string_view url, std::string_view body,
      std::vector<std::string>& headers,
      std::chrono::system_clock::time_point now = std::chrono::system_clock::now()) const {
    SigV4Credentials credentials;
    const std::string problem = this->credentials(credentials);
    if (!problem.empty()) return problem;
    sigv4_sign_request_headers(credentials, options_.region, options_.service, method, url, body,
                               headers, now);
    return {};
  }

  /* The credentials as the first request will read them: "" or why not. */
  std::string check() const {
    SigV4Credentials credentials;
    return this->credentials(credentials);
  }

 private:
  SigV4Options options_;
  Source source_ = Source::kSharedFile;
  SigV4Credentials environment_;  // kEnvironment: read when made
  std::string shared_file_;       // kSharedFile
  std::string profile_;           // kSharedFile
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_SIGV4_HPP
