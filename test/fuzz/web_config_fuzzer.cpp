// web_config_fuzzer.cpp — fuzzes parse_web_config (host/prometheus/server/web_config,
// through strict_yaml) with arbitrary text. Every mistake must be a one-line
// StartupError naming the file; an error about a password hash or an inline
// key never shows the seed files' hash (but as part of the key at fault);
// what is accepted keeps the parser's promises (TLS on has a certificate and
// a key, every user a bcrypt hash, no header value is empty or spans lines).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "prometheus/server/web_config.hpp"
#include "core/startup_error.hpp"
#include "fuzz_support.hpp"

namespace {

namespace tsm = tokenspeed::metrics;

// The secret part of the hash the seed corpus uses.
constexpr std::string_view kSeedHashSecret =
    "Sc3ck7pNCZbTxPnyqbg7GOs9pGA9D0N8uqZDLfbgRKu0OBUyQTRt2";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::string file = "/fuzz/web.yml";
  try {
    const tsm::WebConfig config = tsm::parse_web_config(text, file);
    if (config.tls_enabled) {
      FUZZ_CHECK(!config.tls.cert_file.empty() || !config.tls.cert.empty());
      FUZZ_CHECK(!config.tls.key_file.empty() || !config.tls.key.empty());
      FUZZ_CHECK(config.tls.min_version <= config.tls.max_version);
    }
    for (const auto& [user, hash] : config.basic_auth_users) {
      FUZZ_CHECK(tsm::bcrypt_hash_cost(hash).has_value());
      FUZZ_CHECK(user.find(':') == std::string::npos);
    }
    for (const auto& [name, value] : config.http.headers) {
      FUZZ_CHECK(!value.empty());
      FUZZ_CHECK(value.find('\n') == std::string::npos && value.find('\r') == std::string::npos);
    }
  } catch (const tsm::StartupError& error) {
    const std::string_view line = error.what();
    FUZZ_CHECK(error.file() == file);
    FUZZ_CHECK(line.find('\n') == std::string_view::npos);
    // An error about a secret's key never quotes a value (other keys' errors
    // may quote theirs, and any key may be the seed's text).
    const bool secret_key =
        error.key().starts_with("basic_auth_users") || error.key() == "tls_server_config.key";
    FUZZ_CHECK(!secret_key || line.find(kSeedHashSecret) == std::string_view::npos ||
               error.key().find(kSeedHashSecret) != std::string::npos);
  }
  return 0;
}
