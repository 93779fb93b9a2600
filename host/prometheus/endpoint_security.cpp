// endpoint_security.cpp — the web configuration turned into an OpenSSL server
// context (through Boost.Asio's ssl::context), the users' verifier and the
// headers; and the watch that rebuilds them when a file changes.
#include "prometheus/endpoint_security.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <string_view>

#include "core/fault_log.hpp"
#include "core/file_mode.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {

namespace ssl = boost::asio::ssl;

namespace {

[[noreturn]] void fail(const std::string& file, const std::string& key,
                       const std::string& message) {
  throw StartupError({"prometheus", file, key}, message);
}

// OpenSSL's reason for the last failure, or fallback.
std::string openssl_reason(const boost::system::error_code& error) {
  std::string reason = error.message();
  ERR_clear_error();
  return reason;
}

int openssl_version(TlsVersion version) {
  switch (version) {
    case TlsVersion::tls10:
      return TLS1_VERSION;
    case TlsVersion::tls11:
      return TLS1_1_VERSION;
    case TlsVersion::tls12:
      return TLS1_2_VERSION;
    case TlsVersion::tls13:
      return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

// Go's RequestClientCert and RequireAnyClientCert ask for a certificate but
// do not verify it: the chain is accepted whatever OpenSSL finds.
int accept_any_certificate(int, X509_STORE_CTX*) { return 1; }

void set_client_verification(ssl::context& context, const TlsServerConfig& tls) {
  SSL_CTX* native = context.native_handle();
  switch (tls.client_auth_type) {
    case ClientAuthType::no_client_cert:
      SSL_CTX_set_verify(native, SSL_VERIFY_NONE, nullptr);
      return;
    case ClientAuthType::request_client_cert:
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER, accept_any_certificate);
      return;
    case ClientAuthType::require_any_client_cert:
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                         accept_any_certificate);
      return;
    case ClientAuthType::verify_client_cert_if_given:
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER, nullptr);
      return;
    case ClientAuthType::require_and_verify_client_cert:
      SSL_CTX_set_verify(native, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
      return;
  }
}

void load_credentials(ssl::context& context, const WebConfig& config) {
  const TlsServerConfig& tls = config.tls;
  boost::system::error_code error;
  if (!tls.cert_file.empty()) {
    context.use_certificate_chain_file(tls.cert_file, error);
    if (error)
      fail(config.file, "tls_server_config.cert_file",
           "cannot load the certificate '" + tls.cert_file + "': " + openssl_reason(error));
  } else {
    context.use_certificate_chain(boost::asio::buffer(tls.cert), error);
    if (error)
      fail(config.file, "tls_server_config.cert",
           "cannot load the certificate: " + openssl_reason(error));
  }
  // The key's own text never enters a message: only OpenSSL's reason.
  const std::string key_name =
      tls.key_file.empty() ? "tls_server_config.key" : "tls_server_config.key_file";
  if (!tls.key_file.empty()) {
    context.use_private_key_file(tls.key_file, ssl::context::pem, error);
  } else {
    context.use_private_key(boost::asio::buffer(tls.key), ssl::context::pem, error);
  }
  const bool mismatch = (error && ERR_GET_REASON(static_cast<unsigned long>(error.value())) ==
                                      X509_R_KEY_VALUES_MISMATCH) ||
                        (!error && SSL_CTX_check_private_key(context.native_handle()) != 1);
  if (mismatch) {
    ERR_clear_error();
    fail(config.file, key_name, "the private key does not belong to the certificate");
  }
  if (error) {
    const std::string which = tls.key_file.empty() ? "" : " '" + tls.key_file + "'";
    fail(config.file, key_name,
         "cannot load the private key" + which + ": " + openssl_reason(error));
  }
  if (!tls.client_ca_file.empty()) {
    context.load_verify_file(tls.client_ca_file, error);
    if (error)
      fail(config.file, "tls_server_config.client_ca_file",
           "cannot load the client CA '" + tls.client_ca_file + "': " + openssl_reason(error));
  } else if (!tls.client_ca.empty()) {
    context.add_certificate_authority(boost::asio::buffer(tls.client_ca), error);
    if (error)
      fail(config.file, "tls_server_config.client_ca",
           "cannot load the client CA: " + openssl_reason(error));
  }
}

void set_protocol(ssl::context& context, const WebConfig& config) {
  SSL_CTX* native = context.native_handle();
  const TlsServerConfig& tls = config.tls;
  SSL_CTX_set_min_proto_version(native, openssl_version(tls.min_version));
  SSL_CTX_set_max_proto_version(native, openssl_version(tls.max_version));
  std::string ciphers;
  for (const CipherSuite& suite : tls.cipher_suites) {
    if (suite.tls13) continue;  // as in Go, TLS 1.3's suites are not configurable
    if (!ciphers.empty()) ciphers += ':';
    ciphers += suite.openssl_name;
  }
  if (!ciphers.empty() && SSL_CTX_set_cipher_list(native, ciphers.c_str()) != 1) {
    ERR_clear_error();
    fail(config.file, "tls_server_config.cipher_suites",
         "OpenSSL accepts none of the cipher suites");
  }
  if (tls.prefer_server_cipher_suites) SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
  std::string groups;
  for (const Curve& curve : tls.curve_preferences) {
    if (!groups.empty()) groups += ':';
    groups += curve.openssl_group;
  }
  if (!groups.empty() && SSL_CTX_set1_groups_list(native, groups.c_str()) != 1) {
    ERR_clear_error();
    fail(config.file, "tls_server_config.curve_preferences", "OpenSSL accepts none of the curves");
  }
}

std::unique_ptr<ssl::context> make_tls_context(const WebConfig& config) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::single_dh_use);
  // No session resumption across a reload that changed who may connect.
  SSL_CTX_set_session_cache_mode(context->native_handle(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_TICKET);
  set_protocol(*context, config);
  load_credentials(*context, config);
  set_client_verification(*context, config.tls);
  return context;
}

// The files the security was built from, besides the configuration itself.
std::vector<std::string> named_files(const WebConfig& config) {
  std::vector<std::string> files;
  for (const std::string* file :
       {&config.tls.cert_file, &config.tls.key_file, &config.tls.client_ca_file}) {
    if (!file->empty()) files.push_back(*file);
  }
  return files;
}

bool same_time(const timespec& a, const timespec& b) noexcept {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// "prometheus: /etc/tsm/web.yml: 'tls_server_config.key' holds a secret and
// is readable by other users (mode 0644); ...": the inline private key, or
// the key file, that users other than the owner may read.
void warn_of_readable_key(const WebConfig& config) {
  std::string where;
  std::string advice;
  std::optional<unsigned> mode;
  if (!config.tls.key.empty()) {
    mode = readable_by_others(config.file);
    where = config.file + ": 'tls_server_config.key' holds a secret and is";
    advice = " or use key_file";
  } else if (!config.tls.key_file.empty()) {
    mode = readable_by_others(config.tls.key_file);
    where = config.tls.key_file + " (tls_server_config.key_file of " + config.file +
            "), a private key, is";
  }
  if (!mode) return;
  write_log_line_to_stderr("tokenspeed-metrics: warning: prometheus: " + where +
                           " readable by other users (mode " + mode_text(*mode) +
                           "); restrict it (chmod 600)" + advice);
}

std::string counted(std::size_t count, const std::string& what) {
  return std::to_string(count) + " " + what + (count == 1 ? "" : "s");
}

std::string summary_of(const WebConfig& config) {
  std::string summary = "plain HTTP";
  if (config.tls_enabled) {
    summary = "TLS " + std::string(tls_version_name(config.tls.min_version)) + "-" +
              std::string(tls_version_name(config.tls.max_version)) + " (client certificates: " +
              std::string(client_auth_type_name(config.tls.client_auth_type)) + ")";
  }
  summary += ", " + counted(config.basic_auth_users.size(), "basic-auth user");
  summary += ", " + counted(config.http.headers.size(), "response header");
  summary += config.rate_limit.interval.count() > 0 ? ", a rate limit" : ", no rate limit";
  return summary;
}

}  // namespace

std::shared_ptr<const EndpointSecurity> open_endpoint_security() {
  return std::make_shared<const EndpointSecurity>(std::map<std::string, std::string>{});
}

std::shared_ptr<const EndpointSecurity> load_endpoint_security(const std::string& file) {
  const WebConfig config = read_web_config(file);
  auto security = std::make_shared<EndpointSecurity>(config.basic_auth_users);
  security->file = file;
  security->source_files = named_files(config);
  if (config.tls_enabled) security->tls = make_tls_context(config);
  security->client_allowed_sans = config.tls.client_allowed_sans;
  security->summary = summary_of(config);
  security->headers = config.http.headers;
  security->rate_limit = config.rate_limit;
  return security;
}

bool certificate_has_allowed_san(const void* x509_certificate,
                                 const std::vector<std::string>& allowed) noexcept {
  auto* certificate = static_cast<X509*>(const_cast<void*>(x509_certificate));
  if (certificate == nullptr) return false;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(certificate, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return false;
  bool found = false;
  for (int i = 0; i < sk_GENERAL_NAME_num(names) && !found; ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    std::string text;
    if (name->type == GEN_DNS || name->type == GEN_EMAIL || name->type == GEN_URI) {
      const ASN1_IA5STRING* value = name->d.ia5;
      text.assign(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                  static_cast<std::size_t>(ASN1_STRING_length(value)));
    } else if (name->type == GEN_IPADD) {
      // The address's usual text ("127.0.0.1", "::1"), compared against
      // what the operator wrote.
      const ASN1_OCTET_STRING* value = name->d.iPAddress;
      const int length = ASN1_STRING_length(value);
      char printed[INET6_ADDRSTRLEN] = {};
      if ((length == 4 || length == 16) &&
          ::inet_ntop(length == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(value), printed,
                      sizeof printed) != nullptr) {
        text = printed;
      }
    }
    if (!text.empty() && std::find(allowed.begin(), allowed.end(), text) != allowed.end())
      found = true;
  }
  GENERAL_NAMES_free(names);
  return found;
}

bool EndpointSecurityWatch::FileStamp::operator==(const FileStamp& other) const noexcept {
  return device == other.device && inode == other.inode && size == other.size &&
         same_time(modified, other.modified) && same_time(changed, other.changed);
}

EndpointSecurityWatch::EndpointSecurityWatch(std::string file,
                                             std::chrono::milliseconds check_interval)
    : file_(std::move(file)), check_interval_(check_interval) {
  if (file_.empty()) {
    current_ = open_endpoint_security();
    return;
  }
  watched_ = {file_};
  stamps_ = stamp_files();
  current_ = load_endpoint_security(file_);  // throws StartupError
  warn_of_readable_key(read_web_config(file_));
  watch_files_of(*current_);
  last_look_ = Clock::now();
}

std::vector<EndpointSecurityWatch::FileStamp> EndpointSecurityWatch::stamp_files() const {
  std::vector<FileStamp> stamps;
  stamps.reserve(watched_.size());
  for (const std::string& path : watched_) {
    FileStamp stamp;
    struct stat info {};
    if (::stat(path.c_str(), &info) == 0) {
      stamp.device = info.st_dev;
      stamp.inode = info.st_ino;
      stamp.size = info.st_size;
      stamp.modified = info.st_mtim;
      stamp.changed = info.st_ctim;
    }
    stamps.push_back(stamp);
  }
  return stamps;
}

std::shared_ptr<const EndpointSecurity> EndpointSecurityWatch::current() {
  std::lock_guard lock(mutex_);
  if (file_.empty()) return current_;
  const Clock::time_point now = Clock::now();
  if (now - last_look_ < check_interval_) return current_;
  last_look_ = now;
  std::vector<FileStamp> stamps = stamp_files();
  if (stamps == stamps_) return current_;
  stamps_ = std::move(stamps);  // taken before the load: a later change is seen
  try {
    current_ = load_endpoint_security(file_);
    watch_files_of(*current_);
    ++reloads_;
    last_failure_.clear();
    write_log_line_to_stderr("tokenspeed-metrics: Prometheus endpoint: web configuration '" +
                             file_ + "' reloaded");
  } catch (const std::exception& error) {
    ++failed_reloads_;
    // One line per distinct failure: a file left broken is not logged at
    // every look. The message names file and key, never a secret.
    if (error.what() != last_failure_) {
      last_failure_ = error.what();
      write_log_line_to_stderr(
          "tokenspeed-metrics: Prometheus endpoint: web configuration not "
          "reloaded, the previous one stays in force: " +
          last_failure_);
    }
  }
  return current_;
}

void EndpointSecurityWatch::watch_files_of(const EndpointSecurity& security) {
  std::vector<std::string> watched{file_};
  watched.insert(watched.end(), security.source_files.begin(), security.source_files.end());
  if (watched == watched_) return;
  // Files named for the first time: stamped as they are now.
  watched_ = std::move(watched);
  stamps_ = stamp_files();
}

std::uint64_t EndpointSecurityWatch::reloads() const {
  std::lock_guard lock(mutex_);
  return reloads_;
}

std::uint64_t EndpointSecurityWatch::failed_reloads() const {
  std::lock_guard lock(mutex_);
  return failed_reloads_;
}

}  // namespace tokenspeed::metrics
