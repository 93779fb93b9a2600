// web_config.hpp — the built-in endpoint's web configuration file
// (--metrics-web-config), in the exporter-toolkit format of Prometheus's
// exporters: TLS, basic-auth users, response headers, rate limit. Parses and
// checks the file into a plain struct; loads no certificate and opens no
// socket. Startup (and reload) only. Never puts a secret (a password hash,
// an inline private key) into an error message.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics {

// tls_server_config.client_auth_type, Go's crypto/tls ClientAuthType.
enum class ClientAuthType {
  no_client_cert,                  // "NoClientCert" (the default)
  request_client_cert,             // "RequestClientCert"
  require_any_client_cert,         // "RequireAnyClientCert" (also "RequireClientCert")
  verify_client_cert_if_given,     // "VerifyClientCertIfGiven"
  require_and_verify_client_cert,  // "RequireAndVerifyClientCert"
};

// tls_server_config.min_version / max_version: "TLS10" .. "TLS13".
enum class TlsVersion { tls10, tls11, tls12, tls13 };

// One entry of tls_server_config.cipher_suites: Go's name (the names of Go's
// tls.CipherSuites()) and OpenSSL's. TLS 1.3 suites are accepted as Go
// accepts them and, as in Go, do not restrict TLS 1.3 (not configurable).
struct CipherSuite {
  std::string go_name;       // "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
  std::string openssl_name;  // "ECDHE-RSA-AES128-GCM-SHA256"; TLS 1.3: the IANA name
  bool tls13 = false;
};

// One entry of tls_server_config.curve_preferences.
struct Curve {
  std::string go_name;        // "CurveP256", "CurveP384", "CurveP521", "X25519"
  std::string openssl_group;  // "P-256", "P-384", "P-521", "X25519"
};

struct TlsServerConfig {
  // Relative paths are resolved against the web configuration file's
  // directory, as exporter-toolkit does. "" when not given.
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  // The inline PEM alternatives (cert, key, client_ca); key is a secret.
  std::string cert;
  std::string key;
  std::string client_ca;
  ClientAuthType client_auth_type = ClientAuthType::no_client_cert;
  TlsVersion min_version = TlsVersion::tls12;
  TlsVersion max_version = TlsVersion::tls13;
  // Empty: Go's defaults (web_security applies them).
  std::vector<CipherSuite> cipher_suites;
  bool prefer_server_cipher_suites = true;
  // Empty: Go's defaults (web_security applies them).
  std::vector<Curve> curve_preferences;
  // Unset: any client certificate the policy accepts. Set, one of its DNS,
  // IP, e-mail or URI subject alternative names must equal one of these: an
  // empty list admits no client, as in exporter-toolkit (which checks the
  // list for nil, not for length).
  std::optional<std::vector<std::string>> client_allowed_sans;
};

struct HttpServerConfig {
  // Accepted for compatibility; the endpoint speaks HTTP/1.1 only.
  bool http2 = true;
  // The response headers to add, name and value (non-empty), in file order.
  std::vector<std::pair<std::string, std::string>> headers;
};

struct RateLimitConfig {
  // Zero: no rate limit.
  std::chrono::nanoseconds interval{0};
  std::int64_t burst = 0;
};

struct WebConfig {
  // The file it was read from, as given.
  std::string file;
  // The file holds no YAML node at all: empty, blank or only comments.
  // Accepted at startup as exporter-toolkit accepts it (plain HTTP, no
  // users); a reload refuses it (a file being written looks like this).
  bool empty = false;
  // True when any of the TLS keys that turn TLS on is given (cert, key,
  // client CA or client_auth_type); then cert (or cert_file) and key (or
  // key_file) are present, checked by the parser.
  bool tls_enabled = false;
  TlsServerConfig tls;
  HttpServerConfig http;
  // User name to bcrypt hash (a secret). Empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;
  RateLimitConfig rate_limit;
};

// Reads and checks the web configuration file at path (a regular file, at
// most kConfigurationFileLimit bytes, opened without blocking: a FIFO or a
// device is refused). Throws StartupError naming the file
// and the key path ("tls_server_config.client_auth_type") on an unreadable
// file, invalid YAML, an unknown key or a bad value; one line, never a secret.
WebConfig read_web_config(const std::string& path);

// The same for a file's contents already read; file names it in errors and
// is the base of relative paths.
WebConfig parse_web_config(std::string_view text, const std::string& file);

// The cost of a bcrypt hash ("$2", a minor version letter or none, as Go's
// bcrypt reads it: "$2a$", "$2b$", "$2x$", "$2y$", "$2$"; a two-digit cost
// from 04 to 31, "$", 53 characters of bcrypt's base64), or nothing when hash
// is not one.
std::optional<int> bcrypt_hash_cost(std::string_view hash);

// The exporter-toolkit names, for messages and docs.
std::string_view client_auth_type_name(ClientAuthType type);
std::string_view tls_version_name(TlsVersion version);

}  // namespace tokenspeed::metrics
