// web_security.hpp — what the web configuration file (--metrics-web-config)
// makes of the /metrics endpoint, ready to serve with: the OpenSSL server
// context (certificate, key, client verification, versions, ciphers), the
// basic-auth users, the response headers and the rate limit. Built at startup
// and again, on a thread of its own, when a file it was built from changes
// (EndpointSecurityWatch); immutable once built, shared by the connections
// that use it. Never reads a file or parses on an endpoint I/O thread.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <boost/asio/ssl/context.hpp>

#include "core/thread_safety.hpp"
#include "prometheus/server/security_strength.hpp"
#include "prometheus/server/web_config.hpp"
#include "prometheus/server/basic_auth.hpp"

namespace tokenspeed::metrics {

struct EndpointSecurity {
  explicit EndpointSecurity(std::map<std::string, std::string> basic_auth_users)
      : users(std::move(basic_auth_users)) {}

  std::string file;                       // the web configuration file, "" when none was given
  std::vector<std::string> source_files;  // the certificate, key and CA files it names
  // Null: plain HTTP.
  std::unique_ptr<boost::asio::ssl::context> tls;
  // A client certificate must carry one of these subject alternative names
  // (unset: any the verification accepts; an empty list: none).
  std::optional<std::vector<std::string>> client_allowed_sans;
  BasicAuthVerifier users;
  std::vector<std::pair<std::string, std::string>> headers;  // added to every response
  RateLimitConfig rate_limit;
  // The client certificate policy (meaningful with TLS only).
  ClientAuthType client_auth_type = ClientAuthType::no_client_cert;
  // What a reload may not lower (security_strength.hpp).
  SecurityStrength strength;
  // What it protects the endpoint with, for check: "TLS (client
  // certificates: RequireAndVerifyClientCert), 2 basic-auth users, 1
  // response header, no rate limit"; never a secret.
  std::string summary;
};

// No web configuration: plain HTTP, no users, no headers, no limit.
std::shared_ptr<const EndpointSecurity> open_endpoint_security();

// Reads the web configuration file and builds its TLS context. Throws
// StartupError naming the file and the key (a certificate that does not
// load, a key that does not match it or is encrypted, a client CA that does
// not load, any of them or the file itself not a regular file: a FIFO or a
// device is refused without blocking on it). Never prompts: OpenSSL's
// passphrase callback is one that refuses, so an encrypted key is an error,
// never a read of the terminal.
std::shared_ptr<const EndpointSecurity> load_endpoint_security(const std::string& file);

// The TLS 1.2 (and older) cipher suites in force without cipher_suites, as
// OpenSSL names them: Go's crypto/tls defaults (ECDHE key exchange with
// AES-GCM, ChaCha20-Poly1305 or AES-CBC with SHA-1; no RSA key exchange, no
// CBC with SHA-256 or SHA-384), in Go's order.
const char* go_default_tls12_ciphers() noexcept;

// What reloading from before to after would switch off, for the line of a
// reload refused because it lowers security: "TLS", "client certificate
// verification", "required client certificates", "client_allowed_sans",
// "basic authentication"; "" when nothing (security_weakened_text).
std::string security_switched_off(const EndpointSecurity& before, const EndpointSecurity& after);

// True when one of the subject alternative names (DNS, IP, e-mail, URI) of
// x509_certificate (OpenSSL's X509, as the handshake presented it) is in
// allowed.
bool certificate_has_allowed_san(const void* x509_certificate,
                                 const std::vector<std::string>& allowed) noexcept;

// Keeps the endpoint's security current. A thread of its own looks at the
// web configuration file and the files it names (certificate, key, client
// CA) when inotify reports an event in one of their directories (a rename
// over the file is applied within about 50 ms), and once per check_interval
// whatever inotify says (the fallback: a file system without inotify, a
// symlinked directory), and rebuilds the security when one changed;
// current() only copies a pointer, so the endpoint's I/O threads never read a
// file, parse, or wait for a rebuild.
//
// Reloads fail closed: a change is applied only when the files are the same
// at two looks in a row (the second 50 ms after the first) and did not
// change while they were read (a file
// still being written is waited for); a file that is empty (or blank, or
// only comments), is not valid YAML, or does not load is a failed reload:
// the last good security stays in force, the failure is counted and logged
// once. Security never weakens at reload: a valid file that would switch
// off TLS, client certificate verification or requirement,
// client_allowed_sans or basic authentication (security_weakened) is
// refused the same way, counted apart (refused_weaker) and logged once naming
// what it would have removed; lowering security takes a restart.
// Threading: current() and the counters from any thread;
// look() from any one thread at a time (serialized with the watch's own).
class StampedReader;  // web_security.cpp: the files read, stamped

class EndpointSecurityWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // file "": no web configuration (nothing to watch, no thread). Otherwise
  // loads it (throws StartupError) and starts the watch's thread; with
  // own_thread false, none: only look() steps it (tests).
  EndpointSecurityWatch(std::string file, std::chrono::milliseconds check_interval,
                        bool own_thread = true);
  ~EndpointSecurityWatch();
  EndpointSecurityWatch(const EndpointSecurityWatch&) = delete;
  EndpointSecurityWatch& operator=(const EndpointSecurityWatch&) = delete;

  // The security in force: a copy of a pointer under a lock held for that
  // copy only, never during a rebuild. No file I/O.
  std::shared_ptr<const EndpointSecurity> current() const;

  // One look at the files, on the caller's thread: what the watch's thread
  // does every check_interval (tests call it to step the watch).
  void look();

  std::uint64_t reloads() const noexcept;         // rebuilt after a change
  std::uint64_t failed_reloads() const noexcept;  // a change that did not load
  std::uint64_t refused_weaker() const noexcept;  // a valid change that would lower security

  struct FileStamp {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = -1;  // -1: the file could not be examined
    timespec modified{};
    timespec changed{};
    bool operator==(const FileStamp& other) const noexcept;
  };

 private:
  void run();
  bool look_once();  // look(); true when a change is waiting to hold still
  void watch_directories();
  void rebuild() TSM_REQUIRES(look_mutex_);
  void refuse(const std::string& message, const StampedReader& reader) TSM_REQUIRES(look_mutex_);
  void publish(std::shared_ptr<const EndpointSecurity> security);

  const std::string file_;
  const std::chrono::milliseconds check_interval_;

  // Held only for a copy or a swap of current_.
  mutable Mutex current_mutex_;
  std::shared_ptr<const EndpointSecurity> current_ TSM_GUARDED_BY(current_mutex_);

  // Held by the watch's thread, or a test's look().
  Mutex look_mutex_;
  // The configuration file, then the files it names.
  std::vector<std::string> watched_ TSM_GUARDED_BY(look_mutex_);
  // As they were when last read.
  std::vector<FileStamp> stamps_ TSM_GUARDED_BY(look_mutex_);
  // A change seen at the last look.
  std::optional<std::vector<FileStamp>> pending_ TSM_GUARDED_BY(look_mutex_);
  // Logged once per distinct failure.
  std::string last_failure_ TSM_GUARDED_BY(look_mutex_);

  std::atomic<std::uint64_t> reloads_{0};
  std::atomic<std::uint64_t> failed_reloads_{0};
  std::atomic<std::uint64_t> refused_weaker_{0};

  int stop_fd_ = -1;    // an eventfd, written once to stop the watch's thread
  int notify_fd_ = -1;  // inotify on the watched files' directories; -1: polling only
  std::thread thread_;
};

}  // namespace tokenspeed::metrics
