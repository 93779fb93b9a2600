// web_config.cpp — the exporter-toolkit web configuration into WebConfig:
// the keys, their values and the rules between them. Startup (and reload)
// only; loads no certificate. A secret's value never reaches a message.
#include "prometheus/server/web_config.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <span>

#include "config/metrics_flag_table.hpp"
#include "config/strict_yaml.hpp"
#include "core/bounded_file.hpp"
#include "core/input_excerpt.hpp"
#include "core/name_suggestion.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

// Go's crypto/tls names (tls.CipherSuites()) and OpenSSL's. The suites Go
// lists as insecure (RSA key exchange, RC4, 3DES, CBC with SHA-256) are
// "unknown cipher" to exporter-toolkit, and refused here.
struct CipherName {
  const char* go;
  const char* openssl;
  bool tls13;
};
constexpr std::array<CipherName, 13> kCipherSuites{{
    {"TLS_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256", true},
    {"TLS_AES_256_GCM_SHA384", "TLS_AES_256_GCM_SHA384", true},
    {"TLS_CHACHA20_POLY1305_SHA256", "TLS_CHACHA20_POLY1305_SHA256", true},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256", false},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384", false},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256", false},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384", false},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305", false},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305", false},
}};

constexpr std::array<std::pair<const char*, const char*>, 4> kCurves{{
    {"CurveP256", "P-256"},
    {"CurveP384", "P-384"},
    {"CurveP521", "P-521"},
    {"X25519", "X25519"},
}};

constexpr std::array<std::pair<const char*, ClientAuthType>, 6> kClientAuthTypes{{
    {"NoClientCert", ClientAuthType::no_client_cert},
    {"RequestClientCert", ClientAuthType::request_client_cert},
    {"RequireAnyClientCert", ClientAuthType::require_any_client_cert},
    {"VerifyClientCertIfGiven", ClientAuthType::verify_client_cert_if_given},
    {"RequireAndVerifyClientCert", ClientAuthType::require_and_verify_client_cert},
    // exporter-toolkit keeps this older name of RequireAnyClientCert (not
    // listed in messages: the first five are).
    {"RequireClientCert", ClientAuthType::require_any_client_cert},
}};

constexpr std::array<std::pair<const char*, TlsVersion>, 4> kTlsVersions{{
    {"TLS10", TlsVersion::tls10},
    {"TLS11", TlsVersion::tls11},
    {"TLS12", TlsVersion::tls12},
    {"TLS13", TlsVersion::tls13},
}};

// exporter-toolkit's allowed response headers and, for the enumerated ones,
// their allowed values.
struct HeaderRule {
  const char* name;
  std::vector<std::string> values;  // empty: any value
};
const std::vector<HeaderRule>& header_rules() {
  static const std::vector<HeaderRule> rules{
      {"Content-Security-Policy", {}},
      {"Strict-Transport-Security", {}},
      {"X-Content-Type-Options", {"nosniff"}},
      {"X-Frame-Options", {"deny", "sameorigin"}},
      {"X-XSS-Protection", {}},
  };
  return rules;
}

template <typename Table>
std::string quoted_names(const Table& table) {
  std::string names;
  for (const auto& entry : table) {
    if (!names.empty()) names += ", ";
    names += std::string("'") + entry.first + "'";
  }
  return names;
}

// Reads one file: knows its name and turns every finding into StartupError.
class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  // An error about node's value, at its line.
  [[noreturn]] void fail(const std::string& key, const YamlNode& node,
                         const std::string& message) const {
    fail_at(key, node.line, message);
  }
  // An error about the key of a mapping value, at the key's line.
  [[noreturn]] void fail_key(const std::string& key, const YamlNode& value,
                             const std::string& message) const {
    fail_at(key, value.key_line != 0 ? value.key_line : value.line, message);
  }
  [[noreturn]] void fail_at(const std::string& key, std::size_t line,
                            const std::string& message) const {
    std::string text = message;
    if (line > 0) text += " (line " + std::to_string(line) + ")";
    throw StartupError({"prometheus", file_, key}, text);
  }

  // The entries of a mapping, each key checked against known; a null node
  // (the key given without a value) has none.
  const std::vector<YamlEntry>& mapping(const YamlNode& node, const std::string& key,
                                        const std::vector<std::string>& known) const {
    static const std::vector<YamlEntry> none;
    if (node.kind == YamlNode::Kind::null) return none;
    if (node.kind != YamlNode::Kind::mapping) fail(key, node, "must be a mapping");
    for (const auto& [name, value] : node.entries) {
      if (std::find(known.begin(), known.end(), name) != known.end()) continue;
      std::string message = "unknown key; known keys:";
      const char* separator = " ";
      for (const std::string& candidate : known) {
        message += separator + ("'" + candidate + "'");
        separator = ", ";
      }
      if (const std::string suggestion = closest_name(name, known); !suggestion.empty()) {
        message += "; did you mean '" + suggestion + "'?";
      }
      fail_key(join(key, input_excerpt(name)), value, message);
    }
    return node.entries;
  }

  // A string; null (the key without a value) is "", as in Go.
  std::string string(const YamlNode& node, const std::string& key) const {
    if (node.kind == YamlNode::Kind::null) return {};
    if (node.kind != YamlNode::Kind::scalar) fail(key, node, "must be a string");
    return node.value;
  }

  // A boolean: true/false and YAML 1.1's yes/no/on/off (as Go's YAML
  // reader); null is false, as in Go.
  bool boolean(const YamlNode& node, const std::string& key) const {
    if (node.kind == YamlNode::Kind::null) return false;
    if (node.kind == YamlNode::Kind::scalar && !node.quoted) {
      static const std::array<const char*, 11> yes{"true", "True", "TRUE", "yes", "Yes", "YES",
                                                   "on",   "On",   "ON",   "y",   "Y"};
      static const std::array<const char*, 11> no{"false", "False", "FALSE", "no", "No", "NO",
                                                  "off",   "Off",   "OFF",   "n",  "N"};
      for (const char* word : yes) {
        if (node.value == word) return true;
      }
      for (const char* word : no) {
        if (node.value == word) return false;
      }
    }
    fail(key, node, "must be true or false");
  }

  // A sequence of strings; null is empty.
  std::vector<std::pair<std::string, const YamlNode*>> strings(const YamlNode& node,
                                                               const std::string& key) const {
    std::vector<std::pair<std::string, const YamlNode*>> result;
    if (node.kind == YamlNode::Kind::null) return result;
    if (node.kind != YamlNode::Kind::sequence) fail(key, node, "must be a list of strings");
    for (std::size_t i = 0; i < node.items.size(); ++i) {
      result.emplace_back(string(node.items[i], index(key, i)), &node.items[i]);
    }
    return result;
  }

  static std::string join(const std::string& path, const std::string& name) {
    return path.empty() ? name : path + "." + name;
  }
  static std::string index(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
  }

 private:
  const std::string& file_;
};

// A relative path is relative to the web configuration file's directory.
std::string resolve(const std::string& file, const std::string& path) {
  if (path.empty() || std::filesystem::path(path).is_absolute()) return path;
  return (std::filesystem::path(file).parent_path() / path).lexically_normal().string();
}

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && c != '\t') || byte == 0x7f;
  });
}

// Go's time.ParseDuration: "300ms", "1.5h", "1m30s"; "0" alone. Nothing when
// text is not one or is negative.
std::optional<std::chrono::nanoseconds> parse_go_duration(std::string_view text) {
  if (text == "0") return std::chrono::nanoseconds{0};
  if (text.empty()) return std::nullopt;
  if (text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  static const std::array<std::pair<std::string_view, double>, 8> kUnits{{
      {"ns", 1.0},
      {"us", 1e3},
      {"\xc2\xb5s", 1e3},  // U+00B5 MICRO SIGN
      {"\xce\xbcs", 1e3},  // U+03BC GREEK SMALL LETTER MU
      {"ms", 1e6},
      {"s", 1e9},
      {"m", 60e9},
      {"h", 3600e9},
  }};
  double total = 0;
  while (!text.empty()) {
    std::size_t digits = 0;
    while (digits < text.size() &&
           ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) {
      ++digits;
    }
    const std::string_view number = text.substr(0, digits);
    if (number.empty() || number == "." || std::count(number.begin(), number.end(), '.') > 1) {
      return std::nullopt;
    }
    text.remove_prefix(digits);
    const auto unit = std::find_if(kUnits.begin(), kUnits.end(), [&](const auto& candidate) {
      if (!text.starts_with(candidate.first)) return false;
      const std::string_view rest = text.substr(candidate.first.size());
      return rest.empty() || (rest.front() >= '0' && rest.front() <= '9') || rest.front() == '.';
    });
    if (unit == kUnits.end()) return std::nullopt;
    text.remove_prefix(unit->first.size());
    total += std::stod(std::string(number)) * unit->second;
    if (total > 9.2e18) return std::nullopt;  // past int64 nanoseconds, as Go refuses
  }
  return std::chrono::nanoseconds{static_cast<std::int64_t>(total)};
}

// The tls_server_config keys that name files, as given (exporter-toolkit
// turns TLS on when any is).
struct TlsFilesGiven {
  bool cert_file = false;
  bool key_file = false;
  bool client_ca_file = false;
  const YamlNode* client_auth_node = nullptr;  // where client_auth_type is, for its errors
};

void read_client_auth_type(const Reader& in, const YamlNode& value, const std::string& key,
                           WebConfig& config) {
  const std::string text = in.string(value, key);
  if (text.empty()) return;
  const auto found = std::find_if(kClientAuthTypes.begin(), kClientAuthTypes.end(),
                                  [&](const auto& entry) { return text == entry.first; });
  if (found == kClientAuthTypes.end()) {
    in.fail(key, value,
            "unknown client_auth_type '" + input_excerpt(text) + "' (expected one of " +
                quoted_names(std::span(kClientAuthTypes.data(), 5)) + ")");
  }
  config.tls.client_auth_type = found->second;
  config.tls_enabled = true;
}

TlsVersion read_tls_version(const Reader& in, const YamlNode& value, const std::string& key) {
  const std::string text = in.string(value, key);
  const auto found = std::find_if(kTlsVersions.begin(), kTlsVersions.end(),
                                  [&](const auto& entry) { return text == entry.first; });
  if (found == kTlsVersions.end()) {
    in.fail(key, value,
            "unknown TLS version '" + input_excerpt(text) + "' (expected one of " +
                quoted_names(kTlsVersions) + ")");
  }
  return found->second;
}

void read_cipher_suites(const Reader& in, const YamlNode& value, const std::string& key,
                        TlsServerConfig& tls) {
  for (const auto& listed : in.strings(value, key)) {
    const std::string& text = listed.first;
    const auto found = std::find_if(kCipherSuites.begin(), kCipherSuites.end(),
                                    [&](const CipherName& entry) { return text == entry.go; });
    if (found == kCipherSuites.end()) {
      in.fail(Reader::index(key, tls.cipher_suites.size()), *listed.second,
              "unknown cipher suite '" + input_excerpt(text) +
                  "' (Go's names of crypto/tls, such as "
                  "'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'; RSA key exchange, RC4, 3DES and "
                  "CBC with SHA-256 are refused)");
    }
    tls.cipher_suites.push_back({found->go, found->openssl, found->tls13});
  }
}

void read_curves(const Reader& in, const YamlNode& value, const std::string& key,
                 TlsServerConfig& tls) {
  for (const auto& listed : in.strings(value, key)) {
    const std::string& text = listed.first;
    const auto found = std::find_if(kCurves.begin(), kCurves.end(),
                                    [&](const auto& entry) { return text == entry.first; });
    if (found == kCurves.end()) {
      in.fail(Reader::index(key, tls.curve_preferences.size()), *listed.second,
              "unknown curve '" + input_excerpt(text) + "' (expected one of " +
                  quoted_names(kCurves) + ")");
    }
    tls.curve_preferences.push_back({found->first, found->second});
  }
}

// One key of tls_server_config into config.
void read_tls_key(const Reader& in, const std::string& name, const YamlNode& value,
                  const std::string& file, WebConfig& config, TlsFilesGiven& given) {
  TlsServerConfig& tls = config.tls;
  const std::string key = Reader::join("tls_server_config", name);
  if (name == "cert_file") {
    tls.cert_file = resolve(file, in.string(value, key));
    given.cert_file = !tls.cert_file.empty();
  } else if (name == "key_file") {
    tls.key_file = resolve(file, in.string(value, key));
    given.key_file = !tls.key_file.empty();
  } else if (name == "client_ca_file") {
    tls.client_ca_file = resolve(file, in.string(value, key));
    given.client_ca_file = !tls.client_ca_file.empty();
  } else if (name == "cert") {
    tls.cert = in.string(value, key);
  } else if (name == "key") {
    if (value.kind != YamlNode::Kind::null && value.kind != YamlNode::Kind::scalar) {
      in.fail(key, value, "must be a string (a PEM private key)");
    }
    tls.key = value.kind == YamlNode::Kind::null ? std::string() : value.value;
  } else if (name == "client_ca") {
    tls.client_ca = in.string(value, key);
  } else if (name == "client_auth_type") {
    given.client_auth_node = &value;
    read_client_auth_type(in, value, key, config);
  } else if (name == "min_version" || name == "max_version") {
    (name == "min_version" ? tls.min_version : tls.max_version) = read_tls_version(in, value, key);
  } else if (name == "cipher_suites") {
    read_cipher_suites(in, value, key, tls);
  } else if (name == "prefer_server_cipher_suites") {
    tls.prefer_server_cipher_suites = in.boolean(value, key);
  } else if (name == "curve_preferences") {
    read_curves(in, value, key, tls);
  } else if (name == "client_allowed_sans") {
    // A list, even [], restricts: exporter-toolkit checks the list for
    // nil, not for length. A key without a value is nil there too.
    if (value.kind == YamlNode::Kind::null) return;
    tls.client_allowed_sans.emplace();
    for (const auto& listed : in.strings(value, key)) {
      tls.client_allowed_sans->push_back(listed.first);
    }
  }
}

// The rules between the keys of tls_server_config, once TLS is on.
void check_tls_rules(const Reader& in, const YamlNode& node, const TlsFilesGiven& given,
                     const WebConfig& config) {
  const std::string section = "tls_server_config";
  const TlsServerConfig& tls = config.tls;
  if (!given.cert_file && tls.cert.empty()) {
    in.fail(section + ".cert_file", node, "TLS needs a certificate: give cert_file (or cert)");
  }
  if (!given.key_file && tls.key.empty()) {
    in.fail(section + ".key_file", node, "TLS needs a private key: give key_file (or key)");
  }
  if (given.cert_file && !tls.cert.empty()) {
    in.fail(section + ".cert", node, "give either cert or cert_file, not both");
  }
  if (given.key_file && !tls.key.empty()) {
    in.fail(section + ".key", node, "give either key or key_file, not both");
  }
  if (given.client_ca_file && !tls.client_ca.empty()) {
    in.fail(section + ".client_ca", node, "give either client_ca or client_ca_file, not both");
  }
  const bool client_ca = given.client_ca_file || !tls.client_ca.empty();
  if (client_ca && tls.client_auth_type == ClientAuthType::no_client_cert) {
    in.fail(section + ".client_auth_type",
            given.client_auth_node != nullptr ? *given.client_auth_node : node,
            "a client CA is configured without a client certificate policy: set "
            "client_auth_type (RequireAndVerifyClientCert to verify clients)");
  }
  // A verifying client_auth_type without a client CA verifies against the
  // system's CAs, as Go does (web_security loads OpenSSL's default paths).
  if (tls.client_allowed_sans && tls.client_auth_type == ClientAuthType::no_client_cert) {
    in.fail(section + ".client_allowed_sans", node,
            "applies only with a client_auth_type that asks for client certificates");
  }
  if (tls.min_version > tls.max_version) {
    in.fail(section + ".min_version", node,
            std::string(tls_version_name(tls.min_version)) + " is above max_version " +
                std::string(tls_version_name(tls.max_version)));
  }
}

void read_tls(const Reader& in, const YamlNode& node, const std::string& file, WebConfig& config) {
  TlsFilesGiven given;
  for (const auto& [name, value] :
       in.mapping(node, "tls_server_config",
                  {"cert_file", "key_file", "client_ca_file", "cert", "key", "client_ca",
                   "client_auth_type", "min_version", "max_version", "cipher_suites",
                   "prefer_server_cipher_suites", "curve_preferences", "client_allowed_sans"})) {
    read_tls_key(in, name, value, file, config, given);
  }
  // What turns TLS on, as exporter-toolkit's TLSConfig.IsEnabled.
  const TlsServerConfig& tls = config.tls;
  config.tls_enabled = config.tls_enabled || given.cert_file || given.key_file ||
                       given.client_ca_file || !tls.cert.empty() || !tls.key.empty() ||
                       !tls.client_ca.empty();
  if (config.tls_enabled) check_tls_rules(in, node, given, config);
}

void read_http(const Reader& in, const YamlNode& node, WebConfig& config) {
  const std::string section = "http_server_config";
  for (const auto& [name, value] : in.mapping(node, section, {"http2", "headers"})) {
    const std::string key = Reader::join(section, name);
    if (name == "http2") {
      config.http.http2 = in.boolean(value, key);
      continue;
    }
    std::vector<std::string> allowed;
    for (const HeaderRule& rule : header_rules()) allowed.emplace_back(rule.name);
    for (const YamlEntry& entry : in.mapping(value, key, allowed)) {
      const std::string& header = entry.key;
      const YamlNode& text_node = entry.value;
      const std::string header_key = Reader::join(key, header);
      const std::string text = in.string(text_node, header_key);
      const auto rule = std::find_if(header_rules().begin(), header_rules().end(),
                                     [&](const HeaderRule& r) { return header == r.name; });
      if (!rule->values.empty() &&
          std::find(rule->values.begin(), rule->values.end(), text) == rule->values.end()) {
        std::string expected;
        for (const std::string& allowed_value : rule->values) {
          expected += (expected.empty() ? "'" : ", '") + allowed_value + "'";
        }
        in.fail(header_key, text_node,
                "invalid value '" + input_excerpt(text) + "' (expected one of " + expected + ")");
      }
      if (has_control_character(text)) {
        in.fail(header_key, text_node, "a header value must not hold control characters");
      }
      if (!text.empty()) config.http.headers.emplace_back(header, text);
    }
  }
}

void read_users(const Reader& in, const YamlNode& node, WebConfig& config) {
  const std::string section = "basic_auth_users";
  if (node.kind == YamlNode::Kind::null) return;
  if (node.kind != YamlNode::Kind::mapping) {
    in.fail(section, node, "must be a mapping of user names to bcrypt hashes");
  }
  for (const auto& [user, hash] : node.entries) {
    const std::string key = Reader::join(section, input_excerpt(user));
    if (user.find(':') != std::string::npos) {
      in.fail_key(key, hash, "a user name with ':' can never log in with basic authentication");
    }
    if (has_control_character(user)) {
      in.fail_key(key, hash, "a user name must not hold control characters");
    }
    // The value is a secret: described, never quoted.
    if (hash.kind != YamlNode::Kind::scalar || !bcrypt_hash_cost(hash.value)) {
      in.fail(key, hash,
              "must be a bcrypt hash ($2a$, $2b$, $2x$ or $2y$, a cost from 04 to 31, 60 "
              "characters; "
              "htpasswd -nBC 10 \"\" | tr -d ':\\n' makes one)");
    }
    config.basic_auth_users.emplace(user, hash.value);
  }
}

// A plain scalar read as an integer the way exporter-toolkit's YAML reader
// (go-yaml v2) reads one: underscores dropped, then Go's base prefixes (0x,
// 0o, 0b, a leading 0 for octal) and an optional sign. A value past int64, a
// float ("1e3") or a quoted string is none.
std::optional<std::int64_t> go_yaml_integer(const YamlNode& node) {
  if (node.kind != YamlNode::Kind::scalar || node.quoted) return std::nullopt;
  std::string text;
  for (char c : node.value)
    if (c != '_') text += c;
  std::size_t at = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) at = 1;
  int base = 10;
  const std::string_view rest = std::string_view(text).substr(at);
  if (rest.size() > 2 && rest[0] == '0' && (rest[1] == 'x' || rest[1] == 'X')) {
    base = 16, at += 2;
  } else if (rest.size() > 2 && rest[0] == '0' && (rest[1] == 'o' || rest[1] == 'O')) {
    base = 8, at += 2;
  } else if (rest.size() > 2 && rest[0] == '0' && (rest[1] == 'b' || rest[1] == 'B')) {
    base = 2, at += 2;
  } else if (rest.size() > 1 && rest[0] == '0') {
    base = 8, at += 1;
  }
  if (at >= text.size()) return std::nullopt;
  std::uint64_t magnitude = 0;
  const auto [end, error] =
      std::from_chars(text.data() + at, text.data() + text.size(), magnitude, base);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  const std::uint64_t limit = static_cast<std::uint64_t>(INT64_MAX) + (negative ? 1 : 0);
  if (magnitude > limit) return std::nullopt;
  return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

void read_rate_limit(const Reader& in, const YamlNode& node, WebConfig& config) {
  const std::string section = "rate_limit";
  for (const auto& [name, value] : in.mapping(node, section, {"interval", "burst"})) {
    const std::string key = Reader::join(section, name);
    if (value.kind == YamlNode::Kind::null) continue;
    const std::optional<std::int64_t> integer = go_yaml_integer(value);
    if (name == "burst") {
      if (!integer || *integer < 0)
        in.fail(key, value, "must be a non-negative integer (such as 10, 1_000 or 0x10)");
      config.rate_limit.burst = *integer;
      continue;
    }
    // A duration string, or (as Go's YAML reader) an integer of nanoseconds.
    std::optional<std::chrono::nanoseconds> interval;
    if (integer) {
      if (*integer >= 0) interval = std::chrono::nanoseconds{*integer};
    } else if (value.kind == YamlNode::Kind::scalar) {
      interval = parse_go_duration(value.value);
    }
    if (!interval) {
      in.fail(key, value,
              "must be a non-negative duration such as '1s', '100ms' or '1m30s' (0 disables)");
    }
    config.rate_limit.interval = *interval;
  }
}

// Go's HTTP/2 server (on unless http_server_config.http2 is false) refuses
// to start when a cipher_suites list that still applies to TLS 1.2 holds
// neither suite HTTP/2 requires; exporter-toolkit's servers then do not
// start. The same file is refused here, so that it gets the same verdict
// (the endpoint itself speaks HTTP/1.1).
void check_http2_ciphers(const Reader& in, const YamlNode* cipher_node, const WebConfig& config) {
  const TlsServerConfig& tls = config.tls;
  if (!config.tls_enabled || !config.http.http2 || tls.cipher_suites.empty() ||
      tls.min_version >= TlsVersion::tls13) {
    return;
  }
  const bool required =
      std::any_of(tls.cipher_suites.begin(), tls.cipher_suites.end(), [](const CipherSuite& suite) {
        return suite.go_name == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" ||
               suite.go_name == "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
      });
  if (required) return;
  in.fail_key("tls_server_config.cipher_suites", cipher_node != nullptr ? *cipher_node : YamlNode{},
              "with http_server_config.http2 on (the default) the list must hold "
              "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "
              "as Go's HTTP/2 server requires (exporter-toolkit's servers do not start without "
              "one); add one, set min_version: TLS13, or set http_server_config.http2: false");
}

}  // namespace

std::optional<int> bcrypt_hash_cost(std::string_view hash) {
  // "$2" and a minor version letter or none ("$2$"): Go's bcrypt reads the
  // letter and computes the same for every one.
  if (hash.size() < 4 || hash[0] != '$' || hash[1] != '2') return std::nullopt;
  if (hash[2] >= 'a' && hash[2] <= 'z') hash.remove_prefix(1);
  hash.remove_prefix(2);
  if (hash.size() != 57 || hash[0] != '$' || hash[3] != '$') return std::nullopt;
  if (hash[1] < '0' || hash[1] > '9' || hash[2] < '0' || hash[2] > '9') return std::nullopt;
  const int cost = (hash[1] - '0') * 10 + (hash[2] - '0');
  if (cost < 4 || cost > 31) return std::nullopt;
  const bool base64 = std::all_of(hash.begin() + 4, hash.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '/';
  });
  if (!base64) return std::nullopt;
  return cost;
}

std::string_view client_auth_type_name(ClientAuthType type) {
  for (const auto& [name, value] : kClientAuthTypes) {
    if (value == type) return name;
  }
  return "NoClientCert";
}

std::string_view tls_version_name(TlsVersion version) {
  for (const auto& [name, value] : kTlsVersions) {
    if (value == version) return name;
  }
  return "TLS12";
}

WebConfig parse_web_config(std::string_view text, const std::string& file) {
  YamlNode root;
  try {
    root = parse_strict_yaml(text);
  } catch (const StrictYamlError& error) {
    throw StartupError({"prometheus", file, error.key_path()}, error.what());
  }
  const Reader in(file);
  WebConfig config;
  config.file = file;
  if (root.kind != YamlNode::Kind::null && root.kind != YamlNode::Kind::mapping) {
    in.fail("", root, "the top level of a web configuration must be a mapping");
  }
  config.empty = root.kind == YamlNode::Kind::null;
  const YamlNode* cipher_node = nullptr;
  for (const auto& [name, value] :
       in.mapping(root, "",
                  {"tls_server_config", "http_server_config", "basic_auth_users", "rate_limit"})) {
    if (name == "tls_server_config") {
      read_tls(in, value, file, config);
      if (value.kind == YamlNode::Kind::mapping) {
        for (const YamlEntry& entry : value.entries) {
          if (entry.key == "cipher_suites") cipher_node = &entry.value;
        }
      }
    } else if (name == "http_server_config") {
      read_http(in, value, config);
    } else if (name == "basic_auth_users") {
      read_users(in, value, config);
    } else {
      read_rate_limit(in, value, config);
    }
  }
  check_http2_ciphers(in, cipher_node, config);
  return config;
}

WebConfig read_web_config(const std::string& path) {
  std::string contents;
  try {
    contents = read_bounded_file(path, kConfigurationFileLimit);
  } catch (const FileReadError& error) {
    throw StartupError({"prometheus", path, flag_spelling(metrics_flag(&Options::web_config))},
                       std::string("the web configuration ") + error.what());
  }
  return parse_web_config(contents, path);
}

}  // namespace tokenspeed::metrics
