// endpoint_security.hpp — what the web configuration file (--metrics-web-config)
// makes of the /metrics endpoint, ready to serve with: the OpenSSL server
// context (certificate, key, client verification, versions, ciphers), the
// basic-auth users, the response headers and the rate limit. Built at startup
// and again when a file it was built from changes (EndpointSecurityWatch);
// immutable once built, shared by the connections that use it.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <map>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "config/web_config.hpp"
#include "prometheus/basic_auth.hpp"

namespace tokenspeed::metrics {

struct EndpointSecurity {
  explicit EndpointSecurity(std::map<std::string, std::string> basic_auth_users)
      : users(std::move(basic_auth_users)) {}

  std::string file;                       // the web configuration file, "" when none was given
  std::vector<std::string> source_files;  // the certificate, key and CA files it names
  // Null: plain HTTP.
  std::unique_ptr<boost::asio::ssl::context> tls;
  // A client certificate must carry one of these subject alternative names
  // (empty: any the verification accepts).
  std::vector<std::string> client_allowed_sans;
  BasicAuthVerifier users;
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  RateLimitConfig rate_limit;
  // What it protects the endpoint with, for check: "TLS (client
  // certificates: RequireAndVerifyClientCert), 2 basic-auth users, 1
  // response header, no rate limit"; never a secret.
  std::string summary;
};

// No web configuration: plain HTTP, no users, no headers, no limit.
std::shared_ptr<const EndpointSecurity> open_endpoint_security();

// Reads the web configuration file and builds its TLS context. Throws
// StartupError naming the file and the key (a certificate that does not
// load, a key that does not match it, a client CA that does not load).
std::shared_ptr<const EndpointSecurity> load_endpoint_security(const std::string& file);

// True when one of the subject alternative names (DNS, IP, e-mail, URI) of
// x509_certificate (OpenSSL's X509, as the handshake presented it) is in
// allowed.
bool certificate_has_allowed_san(const void* x509_certificate,
                                 const std::vector<std::string>& allowed) noexcept;

// Keeps the endpoint's security current: current() returns what is in
// force, first rebuilding it when the web configuration file or a file it
// names (certificate, key, client CA) changed since the last look, at most
// once per check_interval. A file that no longer loads keeps the previous
// security in force; the failure is logged and counted.
// Threading: any thread; a look stats a few files and, on a change,
// rebuilds under a mutex (the endpoint's I/O threads, never a producer).
class EndpointSecurityWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // file "": no web configuration (nothing to watch).
  EndpointSecurityWatch(std::string file, std::chrono::milliseconds check_interval);

  std::shared_ptr<const EndpointSecurity> current();

  std::uint64_t reloads() const;         // rebuilt after a change
  std::uint64_t failed_reloads() const;  // a change that did not load

 private:
  struct FileStamp {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;
    timespec modified{};
    timespec changed{};
    bool operator==(const FileStamp& other) const noexcept;
  };
  std::vector<FileStamp> stamp_files() const;
  // Watches the configuration file and the files security was built from.
  void watch_files_of(const EndpointSecurity& security);

  const std::string file_;
  const std::chrono::milliseconds check_interval_;
  mutable std::mutex mutex_;
  std::shared_ptr<const EndpointSecurity> current_;
  std::vector<std::string> watched_;  // the configuration file, then the files it names
  std::vector<FileStamp> stamps_;
  Clock::time_point last_look_;
  std::uint64_t reloads_ = 0;
  std::uint64_t failed_reloads_ = 0;
  std::string last_failure_;  // logged once per distinct failure
};

}  // namespace tokenspeed::metrics
