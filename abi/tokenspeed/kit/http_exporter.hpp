/*
 * tokenspeed/kit/http_exporter.hpp — the base of an output that aggregates
 * events and POSTs them over HTTP (OTLP/HTTP, remote write): the Aggregator
 * emit folds into, the DeliveryLoop wired to an HttpTransport, the log lines
 * of a request dropped or retried (quoting the receiver's answer), the
 * refused-events report and close's verdict. The derived class (CRTP) only
 * encodes and says which statuses to retry (http_response.hpp):
 *
 *   class MySink : public kit::HttpExporter<MySink> {
 *    public:
 *     MySink(kit::HttpExporterOptions options, const plugin::Host& host)
 *         : HttpExporter(std::move(options), kWords, host) { start(); }  // last
 *     ~MySink() { stop(); }                                              // first
 *     // delivery thread:
 *     void collect(std::vector<kit::ExportRequest>& out, bool final);  // encode
 *     const std::vector<std::string>& content_headers() const;          // Content-Type, ...
 *     kit::HttpRetryPolicy retry_policy() const;                       // e.g. every 5xx, gRPC's
 *     void delivered(const kit::HttpResponse& response);               // may do nothing
 *   };
 *
 * Requests go through an HttpTransport (http_client.hpp): an HttpClient
 * (libcurl) of HttpExporterOptions::http, unless its transport field hands
 * in another:
 *
 *   class ScriptedTransport : public kit::HttpTransport {
 *     kit::HttpResponse post(std::string_view body, const std::vector<std::string>& headers,
 *                            Clock::time_point deadline, const std::atomic<bool>* stop) override;
 *   };
 *   options.transport = std::make_shared<ScriptedTransport>();  // before the constructor
 *
 * Everything past the POST stays the exporter's: the retry policy,
 * Retry-After, the figures, the log lines and close's verdict; a post that
 * throws counts as a failed connection (retried), its message as the error.
 *
 * Also the settings every HTTP exporter has: the rows of the URL, headers,
 * TLS and credentials (tls, basic_auth, bearer_token_file, header_files,
 * sigv4, with role_arn through sts_assume_role.hpp), the URL, header, TLS,
 * credential and backoff checks, the HttpClientOptions and DeliveryOptions
 * they make; and the delivery figures
 * of every request (sent, refused, lost, retries, pending), reported to the
 * host and summed up at close. Header-only C++17; needs libcurl
 * (http_client.hpp) and libcrypto (sigv4.hpp).
 */
#ifndef TOKENSPEED_KIT_HTTP_EXPORTER_HPP
#define TOKENSPEED_KIT_HTTP_EXPORTER_HPP

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tokenspeed/kit/aggregation.hpp>
#include <tokenspeed/kit/backoff.hpp>
#include <tokenspeed/kit/delivery_figures.hpp>
#include <tokenspeed/kit/delivery_loop.hpp>
#include <tokenspeed/kit/grpc.hpp>
#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/http_response.hpp>
#include <tokenspeed/kit/json.hpp>
#include <tokenspeed/kit/rate_limited_log.hpp>
#include <tokenspeed/kit/refused_events.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/kit/sigv4.hpp>
#include <tokenspeed/kit/sts_assume_role.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

// ------------------------------------------------------------------ settings

/* Rows of an HTTP exporter's settings table for the keys the functions below
 * read (url, headers, timeout_ms, initial_backoff_ms, max_backoff_ms) and the
 * usual series bound; the plugin gives the defaults, as JSON text. The
 * headers are a kHeaderMap (names and values checked by validate) and
 * secret: operators put API keys there. */
constexpr Setting http_url_setting(std::string_view key, std::string_view default_url,
                                   std::string_view description) {
  return Setting(key, SettingType::kUrl, default_url, 0, 0, description);
}
constexpr Setting http_headers_setting(std::string_view description) {
  return Setting("headers", SettingType::kHeaderMap, "{}", 0, 0, description).secret();
}
constexpr Setting http_timeout_setting(std::string_view default_ms, std::string_view description) {
  return Setting("timeout_ms", SettingType::kInteger, default_ms, 1, 600000, description)
      .bind<&DeliveryOptions::attempt_timeout>();
}
constexpr Setting initial_backoff_setting(std::string_view default_ms) {
  return Setting("initial_backoff_ms", SettingType::kInteger, default_ms, 1, 600000,
                 "First retry delay after a retryable failure; doubles per failure, with 20% "
                 "jitter.")
      .bind<&DeliveryOptions::backoff, &BackoffOptions::initial>();
}
constexpr Setting max_backoff_setting(std::string_view default_ms) {
  return Setting("max_backoff_ms", SettingType::kInteger, default_ms, 1, 3600000,
                 "Longest retry delay (unless Retry-After asks for more, up to 5 minutes).")
      .bind<&DeliveryOptions::backoff, &BackoffOptions::max>();
}
constexpr Setting max_series_setting(std::string_view default_count) {
  return Setting("max_series", SettingType::kInteger, default_count, 1, 10000000,
                 "Series held per process; events of further series are dropped, counted and "
                 "logged.");
}

/* The TLS versions of min_version's choices, in their order. */
inline constexpr TlsVersion kTlsVersionChoices[] = {TlsVersion::kTls10, TlsVersion::kTls11,
                                                    TlsVersion::kTls12, TlsVersion::kTls13};

/* The sub-rows of the tls row (http_tls_setting), bound to HttpClientOptions. */
inline constexpr Setting kHttpTlsFields[] = {
    Setting("ca_file", SettingType::kString, R"("")", 0, 0,
            "CA certificates (PEM) the receiver's certificate is verified with; \"\": the "
            "system's.")
        .bind<&HttpClientOptions::tls, &HttpTlsOptions::ca_file>(),
    Setting("cert_file", SettingType::kString, R"("")", 0, 0,
            "Client certificate (PEM) presented to the receiver; with key_file.")
        .bind<&HttpClientOptions::tls, &HttpTlsOptions::cert_file>(),
    Setting("key_file", SettingType::kString, R"("")", 0, 0, "Private key (PEM) of cert_file.")
        .bind<&HttpClientOptions::tls, &HttpTlsOptions::key_file>(),
    Setting("server_name", SettingType::kString, R"("")", 0, 0,
            "Name the receiver's certificate must carry, also sent as SNI (the connection still "
            "goes to the URL's host); \"\": the URL's host.")
        .bind<&HttpClientOptions::tls, &HttpTlsOptions::server_name>(),
    Setting("insecure_skip_verify", SettingType::kBoolean, "false", 0, 0,
            "Accept any certificate of the receiver, under any name (tests only).")
        .bind<&HttpClientOptions::tls, &HttpTlsOptions::insecure_skip_verify>(),
    Setting("min_version", SettingType::kChoice, R"("TLS12")", 0, 0, "Lowest TLS version accepted.",
            "TLS10|TLS11|TLS12|TLS13")
        .bind_choices<kTlsVersionChoices, &HttpClientOptions::tls, &HttpTlsOptions::min_version>(),
};

/* The sub-rows of the basic_auth row (http_basic_auth_setting). */
inline constexpr Setting kHttpBasicAuthFields[] = {
    Setting("username", SettingType::kString, R"("")", 0, 0, "User name; with password_file.")
        .bind<&HttpClientOptions::basic_auth_username>(),
    Setting("password_file", SettingType::kString, R"("")", 0, 0,
            "File holding the password, read at every request (a trailing line break dropped).")
        .bind<&HttpClientOptions::basic_auth_password_file>(),
};

/* The sub-rows of the sigv4 row (http_sigv4_setting), bound to the signer's
 * options and the AssumeRole call's. */
inline constexpr Setting kHttpSigV4Fields[] = {
    Setting("region", SettingType::kString, R"("")", 0, 0,
            "AWS region of the receiver, e.g. \"eu-west-1\"; set: every request is signed (AWS "
            "Signature V4).")
        .bind<&SigV4Options::region>(),
    Setting("service", SettingType::kString, R"("aps")", 0, 0,
            "AWS service the signature is for (\"aps\": Amazon Managed Service for Prometheus).")
        .bind<&SigV4Options::service>(),
    Setting("access_key_id_file", SettingType::kString, R"("")", 0, 0,
            "File holding the access key ID, read at every request; with secret_access_key_file. "
            "\"\": AWS_ACCESS_KEY_ID, else the shared credentials file.")
        .bind<&SigV4Options::access_key_id_file>(),
    Setting("secret_access_key_file", SettingType::kString, R"("")", 0, 0,
            "File holding the secret access key, read at every request.")
        .bind<&SigV4Options::secret_access_key_file>(),
    Setting("session_token_file", SettingType::kString, R"("")", 0, 0,
            "File holding the session token of temporary credentials, read at every request "
            "(else AWS_SESSION_TOKEN or the profile's).")
        .bind<&SigV4Options::session_token_file>(),
    Setting("profile", SettingType::kString, R"("")", 0, 0,
            "Profile of the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else "
            "~/.aws/credentials), read at every request; \"\": AWS_PROFILE, else default.")
        .bind<&SigV4Options::profile>(),
    Setting("role_arn", SettingType::kString, R"("")", 0, 0,
            "ARN of a role to assume through STS (sts:AssumeRole) with the credentials above; its "
            "temporary credentials sign the requests, renewed before they expire.")
        .bind<&AssumeRoleOptions::role_arn>(),
    Setting("role_session_name", SettingType::kString, R"("tokenspeed-metrics")", 0, 0,
            "RoleSessionName of the AssumeRole call (2 to 64 of letters, digits and +=,.@_-); with "
            "role_arn.")
        .bind<&AssumeRoleOptions::role_session_name>(),
    Setting("external_id", SettingType::kString, R"("")", 0, 0,
            "ExternalId of the AssumeRole call, when the role's trust policy asks for one; with "
            "role_arn.")
        .bind<&AssumeRoleOptions::external_id>(),
    Setting("sts_endpoint", SettingType::kString, R"("")", 0, 0,
            "URL of STS for the AssumeRole call (a VPC endpoint); \"\": "
            "https://sts.<region>.amazonaws.com/. With role_arn.")
        .bind<&AssumeRoleOptions::sts_endpoint>(),
};

/* The TLS and credential rows, read by check_http_settings and
 * http_client_options when the table has them. Each file is checked at
 * startup and read again at every request (rotation without a restart). */
constexpr Setting http_tls_setting() {
  return Setting::object("tls", kHttpTlsFields,
                         "TLS of an https:// URL: CA, client certificate, server name, lowest "
                         "version (an http:// URL with any of them set is refused).");
}
constexpr Setting http_basic_auth_setting() {
  return Setting::object("basic_auth", kHttpBasicAuthFields,
                         "HTTP basic authentication (Authorization: Basic); not with "
                         "bearer_token_file.");
}
constexpr Setting http_bearer_token_file_setting() {
  return Setting("bearer_token_file", SettingType::kString, R"("")", 0, 0,
                 "File holding a token sent as Authorization: Bearer, read at every request; "
                 "not with basic_auth.")
      .bind<&HttpClientOptions::bearer_token_file>();
}
constexpr Setting http_sigv4_setting() {
  return Setting::object("sigv4", kHttpSigV4Fields,
                         "AWS Signature V4 of every request (Amazon Managed Service for "
                         "Prometheus); not with basic_auth or bearer_token_file.");
}
constexpr Setting http_header_files_setting() {
  return Setting("header_files", SettingType::kHeaderMap, "{}", 0, 0,
                 "HTTP headers whose values are files, read at every request, e.g. "
                 "{\"api-key\": \"/run/secrets/api-key\"}.")
      .bind<&HttpClientOptions::header_files>();
}

/* The rows every HTTP exporter's table ends with, in this order: its header
 * files, credentials and TLS (SettingsTable's trailing rows). */
inline constexpr Setting kHttpCredentialSettings[] = {
    http_header_files_setting(), http_basic_auth_setting(), http_bearer_token_file_setting(),
    http_tls_setting(),          http_sigv4_setting(),
};

namespace detail {

inline bool same_header(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

/* A file libcurl reads (a certificate, a key): a readable, non-empty
 * regular file. Throws starting with what ("'tls.ca_file'") and naming the
 * path, never the content. */
inline void check_tls_file(const std::string& what, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    throw std::invalid_argument(what + ": cannot read " + path + ": " + std::strerror(errno));
  struct stat info {};
  const bool regular = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  ::close(fd);
  if (!regular) throw std::invalid_argument(what + ": " + path + " is not a regular file");
  if (info.st_size == 0) throw std::invalid_argument(what + ": " + path + " is empty");
}

/* A credential file as HttpClient reads it at each request. */
inline void check_credential_file(const std::string& what, const std::string& path) {
  std::string content;
  const std::string problem = read_credential_file(path, content);
  std::fill(content.begin(), content.end(), '\0');
  if (!problem.empty()) throw std::invalid_argument(what + ": " + problem);
}

/* The SigV4Options of a normalized sigv4 object. */
inline SigV4Options sigv4_options(const json::Value& sigv4) {
  SigV4Options options;
  fill(http_sigv4_setting(), sigv4, options);
  return options;
}

/* The AssumeRoleOptions of a normalized sigv4 object (role_arn, the
 * session name, the external ID and STS's URL). */
inline AssumeRoleOptions assume_role_options(const json::Value& sigv4) {
  AssumeRoleOptions options;
  fill(http_sigv4_setting(), sigv4, options);
  return options;
}

/* The role keys of a sigv4 object with a region: role_arn an IAM role's
 * ARN, the others only with it, each in the form STS takes. */
inline void check_assume_role_settings(const json::Value& sigv4) {
  const AssumeRoleOptions role = assume_role_options(sigv4);
  if (role.role_arn.empty()) {
    if (role.role_session_name != kDefaultRoleSessionName)
      throw std::invalid_argument("'sigv4.role_session_name' needs 'sigv4.role_arn'");
    for (const char* key : {"external_id", "sts_endpoint"}) {
      if (!sigv4.at(key).as_string().empty())
        throw std::invalid_argument("'sigv4." + std::string(key) + "' needs 'sigv4.role_arn'");
    }
    return;
  }
  if (!is_role_arn(role.role_arn)) {
    throw std::invalid_argument(
        "'sigv4.role_arn' must be an IAM role's ARN "
        "(arn:aws:iam::<12-digit account>:role/<name>), got \"" +
        printable(role.role_arn) + "\"");
  }
  if (!is_role_session_name(role.role_session_name)) {
    throw std::invalid_argument(
        "'sigv4.role_session_name' must be 2 to 64 of letters, digits and +=,.@_-, got \"" +
        printable(role.role_session_name) + "\"");
  }
  // Not quoted: it may be up to 1224 bytes long.
  if (!role.external_id.empty() && !is_external_id(role.external_id)) {
    throw std::invalid_argument(
        "'sigv4.external_id' must be 2 to 1224 of letters, digits and +=,.@:/_-");
  }
  if (!role.sts_endpoint.empty()) check_http_url("'sigv4.sts_endpoint'", role.sts_endpoint);
}

/* An AWS region or service name: lower-case letters, digits and '-'. */
inline bool aws_name(std::string_view name) noexcept {
  if (name.empty()) return false;
  for (const char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return true;
}

/* The sigv4 object: off unless region is set (then no other key may be);
 * on, it signs the Authorization header, so neither basic_auth,
 * bearer_token_file (authorization) nor an Authorization or X-Amz-* header
 * of headers or header_files (names) may be set; the role keys are checked
 * (check_assume_role_settings); the credentials must be found now, where
 * the first request will look (with role_arn: those that sign the
 * AssumeRole call, which is made at the first request, not now). */
inline void check_sigv4_settings(const json::Value& sigv4, bool authorization,
                                 const std::vector<std::string>& names) {
  const std::string& region = sigv4.at("region").as_string();
  if (region.empty()) {
    for (const Setting& row : kHttpSigV4Fields) {
      const json::Value* value = sigv4.find(row.key);
      if (value != nullptr && json::serialize(*value) != row.default_json)
        throw std::invalid_argument("'sigv4." + std::string(row.key) + "' needs 'sigv4.region'");
    }
    return;
  }
  if (!aws_name(region)) {
    throw std::invalid_argument(
        "'sigv4.region' must be an AWS region (lower-case letters, "
        "digits and '-'), got \"" +
        printable(region) + "\"");
  }
  const std::string& service = sigv4.at("service").as_string();
  if (!aws_name(service)) {
    throw std::invalid_argument(
        "'sigv4.service' must be an AWS service name (lower-case "
        "letters, digits and '-'), got \"" +
        printable(service) + "\"");
  }
  check_assume_role_settings(sigv4);
  if (authorization) {
    throw std::invalid_argument(
        "'sigv4' and 'basic_auth' or 'bearer_token_file' cannot both be "
        "set (one Authorization header)");
  }
  for (const std::string& name : names) {
    if (same_header(name, "Authorization") || lower(name).rfind("x-amz-", 0) == 0) {
      throw std::invalid_argument("'" + name + "' header beside sigv4, which sets it: remove it");
    }
  }
  const SigV4Options options = sigv4_options(sigv4);
  const bool id = !options.access_key_id_file.empty();
  if (id != !options.secret_access_key_file.empty()) {
    throw std::invalid_argument(
        id ? "'sigv4.access_key_id_file' needs 'sigv4.secret_access_key_file'"
           : "'sigv4.secret_access_key_file' needs 'sigv4.access_key_id_file'");
  }
  if (!id && !options.session_token_file.empty()) {
    throw std::invalid_argument(
        "'sigv4.session_token_file' needs 'sigv4.access_key_id_file' and "
        "'sigv4.secret_access_key_file'");
  }
  if (id && !options.profile.empty())
    throw std::invalid_argument(
        "'sigv4.profile' and 'sigv4.access_key_id_file' cannot both be set");
  const std::string problem = SigV4Signer(options).check();
  if (!problem.empty()) throw std::invalid_argument("'sigv4': " + problem);
}

}  // namespace detail

/* Why a header name is the HTTP transport's own, or "" when an operator
 * may set it: an exporter over HTTP/1.1 sends its body's type, length and
 * encoding, the host of its URL and its connection's headers itself, and a
 * second value would be ambiguous to the receiver or break the exchange.
 * user-agent stays the operator's to set. */
inline std::string_view http_reserved_header(std::string_view name) noexcept {
  if (detail::same_header(name, "content-type")) return "the exporter sends its body's media type";
  if (detail::same_header(name, "content-length")) return "the exporter sends its body's length";
  if (detail::same_header(name, "content-encoding"))
    return "the exporter sets it from its compression";
  if (detail::same_header(name, "host")) return "it is the host of the URL";
  for (const char* connection : {"connection", "keep-alive", "proxy-connection",
                                 "transfer-encoding", "upgrade", "te", "trailer", "expect"}) {
    if (detail::same_header(name, connection)) return "a connection's own header, the transport's";
  }
  return {};
}

/* Whose headers a transport reserves, for check_http_settings' message. */
struct ReservedHeaders {
  std::string_view (*why)(std::string_view name) noexcept;
  const char* owner;  // "the HTTP transport's", "gRPC's"
};
inline constexpr ReservedHeaders kHttpReservedHeaders{http_reserved_header, "the HTTP transport's"};
inline constexpr ReservedHeaders kGrpcReservedHeaders{grpc_reserved_header, "gRPC's"};

namespace detail {

/* The names of headers_key and header_files, checked: valid names and
 * values (check_header_map), none the transport reserves, none in both, and
 * every header file a readable credential file. */
inline std::vector<std::string> checked_header_names(const json::Value& settings,
                                                     std::string_view headers_key,
                                                     const ReservedHeaders& reserved) {
  std::vector<std::string> names;
  const auto check_not_reserved = [&](std::string_view key, const std::string& name) {
    const std::string_view why = reserved.why(name);
    if (!why.empty()) {
      throw std::invalid_argument("'" + std::string(key) + "': '" + name + "' is " +
                                  reserved.owner + " own header (" + std::string(why) +
                                  "); remove it");
    }
  };
  check_header_map("'" + std::string(headers_key) + "'", settings.at(headers_key));
  for (const auto& member : settings.at(headers_key).as_object()) {
    check_not_reserved(headers_key, member.first);
    names.push_back(member.first);
  }
  const json::Value* files = settings.find("header_files");
  if (files == nullptr) return names;
  check_header_map("'header_files'", *files);
  for (const auto& member : files->as_object()) check_not_reserved("header_files", member.first);
  for (const auto& [name, path] : files->as_object()) {
    for (const std::string& other : names) {
      if (same_header(name, other)) {
        throw std::invalid_argument("'header_files': '" + name + "' is also in '" +
                                    std::string(headers_key) + "'");
      }
    }
    check_credential_file("'header_files': '" + name + "'", path.as_string());
    names.push_back(name);
  }
  return names;
}

/* The tls object (null: the table has none): its settings only with an
 * https:// url, cert_file with key_file, the files readable, server_name a
 * host name. */
inline void check_tls_settings(const json::Value* tls, std::string_view url_key,
                               const std::string& url) {
  if (tls == nullptr) return;
  const bool https = url.rfind("https://", 0) == 0;
  for (const auto& [key, value] : tls->as_object()) {
    const bool set = value.is_bool()        ? value.as_bool()
                     : key == "min_version" ? value.as_string() != "TLS12"
                                            : !value.as_string().empty();
    if (set && !https) {
      throw std::invalid_argument("'tls." + key + "' needs an https:// URL, and '" +
                                  std::string(url_key) + "' is " + url);
    }
  }
  const std::string& cert = tls->at("cert_file").as_string();
  const std::string& key = tls->at("key_file").as_string();
  if (cert.empty() != key.empty()) {
    throw std::invalid_argument(cert.empty() ? "'tls.key_file' needs 'tls.cert_file'"
                                             : "'tls.cert_file' needs 'tls.key_file'");
  }
  for (const char* file : {"ca_file", "cert_file", "key_file"}) {
    const std::string& path = tls->at(file).as_string();
    if (!path.empty()) check_tls_file(std::string("'tls.") + file + "'", path);
  }
  const std::string& server_name = tls->at("server_name").as_string();
  if (server_name.find_first_of(":/@ \t\r\n[]") != std::string::npos) {
    throw std::invalid_argument("'tls.server_name' must be a host name, got \"" + server_name +
                                "\"");
  }
}

}  // namespace detail

/* Checks the settings every HTTP exporter has, after SettingsTable::validate.
 * The URL (key url_key) and the headers (headers_key, header_files) follow
 * the rules of their row types, kUrl and kHeaderMap (check_http_url,
 * check_header_map), which validate applied already; they are applied again
 * here, so that a table that still declares them kString or kStringMap is
 * held to them too. When the table has the rows above: tls only
 * with an https:// URL, cert_file with key_file, basic_auth's two keys
 * together and not with bearer_token_file, no Authorization header beside
 * them, a header not both in headers and header_files, no header the
 * transport sends itself (reserved: HTTP/1.1's by default), and every file
 * readable (a credential file: a regular file of at most 64 KiB, not empty).
 * Throws std::invalid_argument naming the key (and the file), never a
 * header's value or a file's content. */
inline void check_http_settings(const json::Value& settings, std::string_view url_key,
                                std::string_view headers_key = "headers",
                                const ReservedHeaders& reserved = kHttpReservedHeaders) {
  const std::string& url = settings.at(url_key).as_string();
  check_http_url("'" + std::string(url_key) + "'", url);
  const std::vector<std::string> names =
      detail::checked_header_names(settings, headers_key, reserved);
  detail::check_tls_settings(settings.find("tls"), url_key, url);
  bool authorization = false;
  if (const json::Value* basic = settings.find("basic_auth")) {
    const std::string& username = basic->at("username").as_string();
    const std::string& password_file = basic->at("password_file").as_string();
    if (username.empty() != password_file.empty()) {
      throw std::invalid_argument(username.empty()
                                      ? "'basic_auth.password_file' needs 'basic_auth.username'"
                                      : "'basic_auth.username' needs 'basic_auth.password_file'");
    }
    if (username.find_first_of(":\r\n") != std::string::npos)
      throw std::invalid_argument("'basic_auth.username' must not hold ':' or a line break");
    if (!password_file.empty()) {
      detail::check_credential_file("'basic_auth.password_file'", password_file);
      authorization = true;
    }
  }
  if (const json::Value* bearer = settings.find("bearer_token_file")) {
    if (!bearer->as_string().empty()) {
      if (authorization) {
        throw std::invalid_argument(
            "'basic_auth' and 'bearer_token_file' cannot both be set (one Authorization header)");
      }
      detail::check_credential_file("'bearer_token_file'", bearer->as_string());
      authorization = true;
    }
  }
  if (authorization) {
    for (const std::string& name : names) {
      if (detail::same_header(name, "Authorization")) {
        throw std::invalid_argument("'" + name +
                                    "' header beside basic_auth or bearer_token_file: keep one");
      }
    }
  }
  if (const json::Value* sigv4 = settings.find("sigv4"))
    detail::check_sigv4_settings(*sigv4, authorization, names);
}

/* The checks of a gRPC exporter's settings: check_http_settings' with the
 * headers gRPC owns reserved (grpc_reserved_header) instead of HTTP/1.1's,
 * then the URL a gRPC target (check_grpc_endpoint), and the value of a -bin
 * header in base64, as gRPC sends binary metadata: of headers_key, and of
 * header_files as the file holds it now (read again at each call). Throws
 * std::invalid_argument naming the key and the header, never quoting a
 * value. */
inline void check_grpc_settings(const json::Value& settings, std::string_view url_key,
                                std::string_view headers_key = "headers") {
  check_http_settings(settings, url_key, headers_key, kGrpcReservedHeaders);
  check_grpc_endpoint("'" + std::string(url_key) + "'", settings.at(url_key).as_string());
  for (const std::string_view key : {headers_key, std::string_view("header_files")}) {
    const json::Value* headers = settings.find(key);
    if (headers == nullptr) continue;
    for (const auto& [name, value] : headers->as_object()) {
      const bool binary =
          name.size() > 4 &&
          detail::same_header(std::string_view(name).substr(name.size() - 4), "-bin");
      if (!binary) continue;
      std::string text = value.as_string();
      if (key != headers_key && !read_credential_file(value.as_string(), text).empty()) continue;
      std::string decoded;
      const bool base64 = grpc_base64_decode(text, decoded);
      std::fill(text.begin(), text.end(), '\0');
      std::fill(decoded.begin(), decoded.end(), '\0');
      if (!base64) {
        throw std::invalid_argument(
            "'" + std::string(key) + "': '" + name + "' must hold base64 (gRPC sends a -bin " +
            "header's value as binary metadata)" +
            (key == headers_key ? std::string() : ", and its file does not"));
      }
    }
  }
}

/* The HttpClientOptions of checked settings: the URL and the headers as
 * "Name: value" lines, and TLS and credentials when the table has their
 * rows. */
inline HttpClientOptions http_client_options(const Settings& settings, std::string_view url_key,
                                             std::string_view headers_key = "headers") {
  HttpClientOptions options;
  options.url = settings.string(url_key);
  for (const auto& [name, value] : settings.string_map(headers_key))
    options.headers.push_back(name + ": " + value);
  const json::Value& all = settings.json();
  for (const Setting& row : kHttpCredentialSettings) {
    if (all.find(row.key) != nullptr) fill(row, settings, options);
  }
  if (const json::Value* sigv4 = all.find("sigv4")) {
    if (!sigv4->at("region").as_string().empty() && sigv4->at("role_arn").as_string().empty()) {
      auto signer = std::make_shared<const SigV4Signer>(detail::sigv4_options(*sigv4));
      options.sign = [signer](std::string_view method, std::string_view url, std::string_view body,
                              std::vector<std::string>& headers) {
        return signer->sign(method, url, body, headers);
      };
    } else if (!sigv4->at("region").as_string().empty()) {
      // The STS call is verified as the receiver is, but presents no client
      // certificate and expects STS's own name: those two are the receiver's.
      AssumeRoleOptions role = detail::assume_role_options(*sigv4);
      role.tls = options.tls;
      role.tls.cert_file.clear();
      role.tls.key_file.clear();
      role.tls.server_name.clear();
      auto signer = std::make_shared<AssumeRoleSigner>(detail::sigv4_options(*sigv4), role);
      options.sign_with_deadline =
          [signer](std::string_view method, std::string_view url, std::string_view body,
                   std::vector<std::string>& headers, HttpClient::Clock::time_point deadline,
                   const std::atomic<bool>* stop) {
            return signer->sign(method, url, body, headers, deadline, stop);
          };
    }
  }
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
  // The rows as the factories above bind them (the defaults play no part).
  for (const Setting& row :
       {http_timeout_setting({}, {}), initial_backoff_setting({}), max_backoff_setting({})})
    fill(row, settings, options);
  return options;
}

// ----------------------------------------------------------------- the base

/* One request body ready to POST, and how many data items it carries. */
struct ExportRequest {
  std::string body;
  std::size_t items = 0;  // data points, samples: counted when dropped
  // Set by the base after the derived collect (the delivery figures):
  uint64_t events = 0;  // delta: this request's share of its collect's events
  // Cumulative: on the last request of a collect, Snapshot::events of that
  // collect (once every request of the collect was delivered, the back end
  // holds the effect of that many events); 0 on the others.
  uint64_t events_through = 0;
};

/* Everything the base needs; each plugin fills it from its settings table
 * in create_sink. */
struct HttpExporterOptions {
  HttpClientOptions http;  // passed through to the HttpClient as it is
  AggregationOptions aggregation;
  DeliveryOptions delivery;
  std::chrono::milliseconds log_interval{10000};  // at most one line per topic per interval
  // What requests are posted through; null: an HttpClient of http. Given,
  // http.url still names the receiver in the log lines. Last, so that an
  // aggregate initialisation of the fields above still compiles.
  std::shared_ptr<HttpTransport> transport;
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
 * content_headers, retry_policy and delivered, and talks to the network; it
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
    settle_figures();
    const std::string summary =
        account_.close_summary(url(), "over max_series or invalid",
                               "rejected by the receiver, a full queue or close's "
                               "deadline");
    if (!summary.empty()) log_.report(TSM_LOG_WARNING, "close summary", summary);
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
        transport_(options_.transport ? options_.transport
                                      : std::make_shared<HttpClient>(options_.http)),
        account_(host),
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
          const std::size_t before = out.size();
          derived().collect(out, final);
          attribute_events(out, before);
          report_figures();
        },
        [this](const ExportRequest& request, HttpClient::Clock::time_point deadline,
               const std::atomic<bool>* stop) { return send(request, deadline, stop); },
        [this] { transport_->interrupt(); },
        [this](const ExportRequest& request, DropReason reason, const std::string& why) {
          dropped(request, reason, why);
        },
        [this](const std::string& why, std::chrono::milliseconds delay) { retrying(why, delay); },
    };
  }

  SendResult send(const ExportRequest& request, HttpClient::Clock::time_point deadline,
                  const std::atomic<bool>* stop) {
    const HttpResponse response = post_request(request, deadline, stop);
    const HttpRetryPolicy policy = derived().retry_policy();
    SendResult result =
        policy.grpc ? classify_grpc_response(response) : classify_http_response(response, policy);
    if (result.outcome == SendResult::Outcome::kDelivered) {
      derived().delivered(response);
      count_delivered(request);
    }
    return result;
  }

  // A transport that throws is one whose connection failed: retried, not
  // rejected as the delivery loop would a throwing send.
  HttpResponse post_request(const ExportRequest& request, HttpTransport::Clock::time_point deadline,
                            const std::atomic<bool>* stop) {
    const std::vector<std::string>& headers = derived().content_headers();
    HttpResponse response;
    try {
      return transport_->post(request.body, headers, deadline, stop);
    } catch (const std::exception& e) {
      response.error = std::string("transport failed: ") + e.what();
    } catch (...) {
      response.error = "transport failed";
    }
    return response;
  }

  // Delivery thread: a request given up.
  void dropped(const ExportRequest& request, DropReason reason, const std::string& why) {
    items_dropped_ += request.items;
    if (cumulative())
      collect_intact_ = false;  // its data is sent again with the next collect
    else
      account_.figures().lost += request.events;
    report_figures();
    const char* topic = reason == DropReason::kRejected    ? words_.rejected_topic
                        : reason == DropReason::kQueueFull ? "queue full"
                                                           : "close deadline";
    log_.report(TSM_LOG_WARNING, topic,
                "dropped a request of " + std::to_string(request.items) + " " + words_.items +
                    " for " + url() + ": " + why + " (" + std::to_string(items_dropped_) + " " +
                    words_.items + " dropped in total)",
                request.items);
  }

  // Delivery thread: an attempt that will be retried.
  void retrying(const std::string& why, std::chrono::milliseconds delay) {
    ++account_.figures().retries;
    report_figures();
    last_failure_ = why;
    log_.report(TSM_LOG_WARNING, words_.failed_topic,
                std::string(words_.attempt) + " to " + url() + " failed: " + why +
                    "; retrying in " + std::to_string(delay.count()) + " ms");
  }

  void report_refused_events() {
    refused_.report(aggregator_.figures(), options_.aggregation.max_series, log_);
  }

  bool cumulative() const noexcept { return options_.delivery.recollect_on_retry; }

  // Delivery thread, after a collect: gives the requests it made (from
  // index first) the events they carry.
  void attribute_events(std::vector<ExportRequest>& out, std::size_t first) {
    const uint64_t through = aggregator_.collected_events();
    const uint64_t fresh = through - collected_through_;
    collected_through_ = through;
    collect_intact_ = true;
    if (out.size() <= first) {
      // Nothing to send: a delta collect of no change; cumulative, no series.
      if (cumulative()) account_.figures().sent = std::max(account_.figures().sent, through);
      return;
    }
    std::vector<std::size_t> items;
    for (std::size_t i = first; i < out.size(); ++i) items.push_back(out[i].items);
    const std::vector<uint64_t> shares = share_events(fresh, items);
    for (std::size_t i = first; i < out.size(); ++i) out[i].events = shares[i - first];
    out.back().events_through = through;
  }

  // Delivery thread: a request the back end accepted.
  void count_delivered(const ExportRequest& request) {
    plugin::DeliveryFigures& figures = account_.figures();
    if (!cumulative()) {
      figures.sent += request.events;
    } else if (request.events_through != 0 && collect_intact_) {
      figures.sent = std::max(figures.sent, request.events_through);
    }
    report_figures();
  }

  // The counters not kept event by event, then the report to the host.
  void report_figures() {
    const AggregationFigures stats = aggregator_.figures();
    plugin::DeliveryFigures& figures = account_.figures();
    figures.refused = stats.over_series_limit + stats.invalid;
    const uint64_t settled = figures.sent + figures.lost;
    figures.pending = stats.accepted > settled ? stats.accepted - settled : 0;
    account_.report();
  }

  // close, after the delivery thread ended: what was not sent is lost.
  void settle_figures() {
    const AggregationFigures stats = aggregator_.figures();
    plugin::DeliveryFigures& figures = account_.figures();
    if (stats.accepted > figures.sent + figures.lost) figures.lost = stats.accepted - figures.sent;
    report_figures();
  }

  const HttpExporterOptions options_;
  const HttpExporterWords words_;
  RateLimitedLog log_;
  Aggregator aggregator_;
  const std::shared_ptr<HttpTransport> transport_;
  DeliveryAccount account_;           // delivery thread, then close
  uint64_t collected_through_ = 0;    // delivery thread only: events of the last collect
  bool collect_intact_ = true;        // delivery thread only: no request of it dropped
  RefusedEventsReport refused_;       // delivery thread only
  uint64_t items_dropped_ = 0;        // delivery thread only
  std::string last_failure_;          // delivery thread only, read after the loop ended
  DeliveryLoop<ExportRequest> loop_;  // last: its thread uses everything above
  bool closed_ = false;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_HTTP_EXPORTER_HPP
