// web_config_openssl_test.cpp — the OpenSSL names web_config maps Go's names
// to are OpenSSL 3's: each cipher suite is the one of that standard name,
// each curve a group OpenSSL accepts. Part of web_config_test.
#include <catch2/catch.hpp>

#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "prometheus/server/web_config.hpp"

using namespace tokenspeed::metrics;

namespace {

const std::string kAllNames =
    "tls_server_config:\n"
    "  cert_file: server.crt\n"
    "  key_file: server.key\n"
    "  cipher_suites:\n"
    "  - TLS_AES_128_GCM_SHA256\n"
    "  - TLS_AES_256_GCM_SHA384\n"
    "  - TLS_CHACHA20_POLY1305_SHA256\n"
    "  - TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA\n"
    "  - TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA\n"
    "  - TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA\n"
    "  - TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA\n"
    "  - TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256\n"
    "  - TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384\n"
    "  - TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n"
    "  - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384\n"
    "  - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256\n"
    "  - TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256\n"
    "  curve_preferences: [CurveP256, CurveP384, CurveP521, X25519]\n";

struct FreeContext {
  void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
};

}  // namespace

TEST_CASE("every accepted cipher suite is OpenSSL's suite of the same standard name") {
  const WebConfig config = parse_web_config(kAllNames, "/etc/tsm/web.yml");
  REQUIRE(config.tls.cipher_suites.size() == 13);
  for (const CipherSuite& suite : config.tls.cipher_suites) {
    INFO(suite.go_name);
    const std::unique_ptr<SSL_CTX, FreeContext> context(SSL_CTX_new(TLS_server_method()));
    REQUIRE(context);
    if (suite.tls13) {
      CHECK(suite.openssl_name == suite.go_name);
      CHECK(SSL_CTX_set_ciphersuites(context.get(), suite.openssl_name.c_str()) == 1);
      continue;
    }
    // Security level 0: the check is about names, not about what a default
    // configuration allows.
    REQUIRE(SSL_CTX_set_cipher_list(context.get(), (suite.openssl_name + ":@SECLEVEL=0").c_str()) ==
            1);
    bool found = false;
    STACK_OF(SSL_CIPHER)* ciphers = SSL_CTX_get_ciphers(context.get());
    for (int i = 0; i < sk_SSL_CIPHER_num(ciphers); ++i) {
      const SSL_CIPHER* cipher = sk_SSL_CIPHER_value(ciphers, i);
      if (suite.openssl_name == SSL_CIPHER_get_name(cipher)) {
        found = true;
        CHECK(suite.go_name == SSL_CIPHER_standard_name(cipher));
      }
    }
    CHECK(found);
  }
}

TEST_CASE("every accepted curve is a group OpenSSL accepts") {
  const WebConfig config = parse_web_config(kAllNames, "/etc/tsm/web.yml");
  REQUIRE(config.tls.curve_preferences.size() == 4);
  for (const Curve& curve : config.tls.curve_preferences) {
    INFO(curve.go_name);
    const std::unique_ptr<SSL_CTX, FreeContext> context(SSL_CTX_new(TLS_server_method()));
    REQUIRE(context);
    CHECK(SSL_CTX_set1_groups_list(context.get(), curve.openssl_group.c_str()) == 1);
  }
}
