// endpoint_security_test.cpp — unit tests of host/prometheus/endpoint_security:
// a web configuration turned into a TLS context (certificates made here with
// Debian's openssl command), the errors of files that do not load, the
// subject alternative names of a client certificate, and the watch that
// reloads after a change and keeps the old security when the change is bad.
#include <catch2/catch.hpp>

#include <openssl/pem.h>
#include <openssl/x509.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "core/startup_error.hpp"
#include "prometheus/endpoint_security.hpp"

using namespace tokenspeed::metrics;
namespace fs = std::filesystem;

namespace {

void run(const std::string& command) {
  INFO(command);
  REQUIRE(std::system((command + " >/dev/null 2>&1").c_str()) == 0);
}

void write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// A directory with a self-signed certificate (SANs DNS scraper.test and
// IP 127.0.0.1) and its key, and a second key that does not belong to it.
struct Material {
  fs::path dir;
  Material() {
    char name[] = "/tmp/tsm-endpoint-security-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
    const std::string d = dir.string();
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
        "-subj /CN=test -addext subjectAltName=DNS:scraper.test,IP:127.0.0.1 -keyout " +
        d + "/server.key -out " + d + "/server.crt");
    run("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " + d + "/other.key");
  }
  ~Material() { fs::remove_all(dir); }
  fs::path config(const std::string& text) const {
    write(dir / "web.yml", text);
    return dir / "web.yml";
  }
};

X509* read_certificate(const fs::path& path) {
  FILE* file = std::fopen(path.c_str(), "r");
  REQUIRE(file != nullptr);
  X509* certificate = PEM_read_X509(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  REQUIRE(certificate != nullptr);
  return certificate;
}

std::string startup_error_of(const fs::path& file) {
  try {
    load_endpoint_security(file.string());
  } catch (const StartupError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("without a web configuration the endpoint is open plain HTTP") {
  const auto security = open_endpoint_security();
  CHECK(security->tls == nullptr);
  CHECK_FALSE(security->users.enabled());
  CHECK(security->headers.empty());
}

TEST_CASE("a web configuration with TLS builds a context and keeps users and headers") {
  const Material material;
  const auto file = material.config(
      "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
      "basic_auth_users:\n  prom: $2b$04$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy\n"
      "http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
  const auto security = load_endpoint_security(file.string());
  CHECK(security->tls != nullptr);
  CHECK(security->users.enabled());
  REQUIRE(security->headers.size() == 1);
  CHECK(security->headers[0].first == "X-Frame-Options");
  CHECK(security->source_files.size() == 2);
}

TEST_CASE("a key that is not the certificate's fails start-up naming the key") {
  const Material material;
  const auto file =
      material.config("tls_server_config:\n  cert_file: server.crt\n  key_file: other.key\n");
  const std::string error = startup_error_of(file);
  CHECK(error.find("tls_server_config.key_file") != std::string::npos);
  INFO(error);
  CHECK(error.find("does not belong to the certificate") != std::string::npos);
  CHECK(error.find(file.string()) != std::string::npos);
}

TEST_CASE("a certificate file that is not one fails start-up naming cert_file") {
  const Material material;
  write(material.dir / "broken.crt", "not a certificate\n");
  const auto file =
      material.config("tls_server_config:\n  cert_file: broken.crt\n  key_file: server.key\n");
  const std::string error = startup_error_of(file);
  CHECK(error.find("tls_server_config.cert_file") != std::string::npos);
  CHECK(error.find("cannot load the certificate") != std::string::npos);
}

TEST_CASE("an inline key that does not load is reported without its text") {
  const Material material;
  const auto file = material.config(
      "tls_server_config:\n  cert_file: server.crt\n"
      "  key: \"-----BEGIN PRIVATE KEY-----\\nTOPSECRETBYTES\\n-----END PRIVATE KEY-----\\n\"\n");
  const std::string error = startup_error_of(file);
  CHECK(error.find("tls_server_config.key") != std::string::npos);
  CHECK(error.find("TOPSECRETBYTES") == std::string::npos);
}

TEST_CASE("a client certificate's subject alternative names are matched exactly") {
  const Material material;
  X509* certificate = read_certificate(material.dir / "server.crt");
  CHECK(certificate_has_allowed_san(certificate, {"scraper.test"}));
  CHECK(certificate_has_allowed_san(certificate, {"other", "127.0.0.1"}));
  CHECK_FALSE(certificate_has_allowed_san(certificate, {"test"}));  // the CN is not a SAN
  CHECK_FALSE(certificate_has_allowed_san(certificate, {"scraper"}));
  CHECK_FALSE(certificate_has_allowed_san(nullptr, {"scraper.test"}));
  X509_free(certificate);
}

TEST_CASE("the watch reloads a changed file and keeps the old security when it is broken") {
  const Material material;
  const auto file = material.config(
      "basic_auth_users:\n  a: "
      "$2b$04$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy\n");
  EndpointSecurityWatch watch(file.string(), std::chrono::milliseconds(0));
  const auto first = watch.current();
  CHECK(first->users.enabled());
  CHECK(watch.current() == first);  // unchanged: the same security

  material.config("http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
  const auto second = watch.current();
  CHECK(second != first);
  CHECK_FALSE(second->users.enabled());
  CHECK(watch.reloads() == 1);

  material.config("tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n");
  CHECK(watch.current() == second);  // the broken file leaves the last good one in force
  CHECK(watch.failed_reloads() == 1);
  CHECK(watch.current() == second);  // looked at again, unchanged: no second failure
  CHECK(watch.failed_reloads() == 1);
}

TEST_CASE("the watch reloads when a certificate it was built from changes") {
  const Material material;
  const auto file =
      material.config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n");
  EndpointSecurityWatch watch(file.string(), std::chrono::milliseconds(0));
  const auto first = watch.current();
  // A rotated certificate: a new key pair written over the old files.
  const std::string d = material.dir.string();
  run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
      "-subj /CN=rotated -keyout " +
      d + "/server.key.new -out " + d + "/server.crt.new");
  fs::rename(material.dir / "server.key.new", material.dir / "server.key");
  fs::rename(material.dir / "server.crt.new", material.dir / "server.crt");
  CHECK(watch.current() != first);
  CHECK(watch.reloads() == 1);
}

TEST_CASE("the watch looks at the files at most once per interval") {
  const Material material;
  const auto file = material.config("");
  EndpointSecurityWatch watch(file.string(), std::chrono::hours(1));
  const auto first = watch.current();
  material.config("http_server_config:\n  headers:\n    X-Frame-Options: deny\n");
  CHECK(watch.current() == first);
  CHECK(watch.reloads() == 0);
}
