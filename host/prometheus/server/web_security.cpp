// web_security.cpp — the web configuration turned into an OpenSSL server
// context (through Boost.Asio's ssl::context) with Go's crypto/tls defaults,
// the users' verifier and the headers; and the watch that rebuilds them, on
// its own thread, when a file changes. Files are opened without blocking and
// read into memory: OpenSSL never opens a path.
#include "prometheus/server/web_security.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <tuple>

#include "config/metrics_flag_table.hpp"
#include "core/bounded_file.hpp"
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

// Set by refuse_passphrase on the thread that loads a key.
thread_local bool passphrase_asked = false;

// OpenSSL's passphrase callback: refuses, so that an encrypted key fails to
// load instead of OpenSSL's default prompting on the terminal (which would
// hold start-up, or the reload thread, until someone typed).
int refuse_passphrase(char*, int, int, void*) {
  passphrase_asked = true;
  return -1;
}

// The PEM text of the certificate, key and client CA files, read by the
// caller (without blocking, regular files only); "" for those not given.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string client_ca;
};

// Adds the certificates of the client CA text to the context's trust store.
// Each one is an anchor, as in Go's pool: a CA file holding only an
// intermediate CA verifies the clients it signed (a partial chain). Text
// without any certificate leaves the store empty, as Go's pool is then
// (exporter-toolkit ignores AppendCertsFromPEM's answer): no client
// certificate verifies, which is said once.
void add_client_cas(ssl::context& context, const std::string& pem, const WebConfig& config,
                    const std::string& key, const std::string& which) {
  X509_STORE* store = SSL_CTX_get_cert_store(context.native_handle());
  X509_STORE_set_flags(store, X509_V_FLAG_PARTIAL_CHAIN);
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) fail(config.file, key, "cannot read the client CA: out of memory");
  std::size_t added = 0;
  std::string error;
  while (X509* certificate = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(store, certificate) == 1) ++added;
    X509_free(certificate);
  }
  const unsigned long last = ERR_peek_last_error();
  const bool ended =
      ERR_GET_LIB(last) == ERR_LIB_PEM && ERR_GET_REASON(last) == PEM_R_NO_START_LINE;
  if (!ended && last != 0)
    error = ERR_reason_error_string(last) ? ERR_reason_error_string(last) : "";
  ERR_clear_error();
  BIO_free(bio);
  if (!error.empty()) fail(config.file, key, "cannot load the client CA" + which + ": " + error);
  if (added == 0)
    write_log_line_to_stderr("tokenspeed-metrics: warning: prometheus: " + config.file + ": '" +
                             key + "' holds no certificate: no client certificate will verify");
}

void load_credentials(ssl::context& context, const WebConfig& config, const TlsFiles& files) {
  const TlsServerConfig& tls = config.tls;
  boost::system::error_code error;
  const std::string& cert = tls.cert_file.empty() ? tls.cert : files.cert;
  context.use_certificate_chain(boost::asio::buffer(cert), error);
  if (error) {
    if (tls.cert_file.empty())
      fail(config.file, "tls_server_config.cert",
           "cannot load the certificate: " + openssl_reason(error));
    fail(config.file, "tls_server_config.cert_file",
         "cannot load the certificate '" + tls.cert_file + "': " + openssl_reason(error));
  }
  // The key's own text never enters a message: only OpenSSL's reason.
  const std::string key_name =
      tls.key_file.empty() ? "tls_server_config.key" : "tls_server_config.key_file";
  const std::string& key = tls.key_file.empty() ? tls.key : files.key;
  passphrase_asked = false;
  context.use_private_key(boost::asio::buffer(key), ssl::context::pem, error);
  if (passphrase_asked) {
    ERR_clear_error();
    const std::string which = tls.key_file.empty() ? "" : " '" + tls.key_file + "'";
    fail(config.file, key_name,
         "the private key" + which +
             " is encrypted; the endpoint never asks for a passphrase: store it decrypted "
             "(openssl pkey -in KEY -out PLAIN_KEY), readable by its user only");
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
    add_client_cas(context, files.client_ca, config, "tls_server_config.client_ca_file",
                   " '" + tls.client_ca_file + "'");
  } else if (!tls.client_ca.empty()) {
    add_client_cas(context, tls.client_ca, config, "tls_server_config.client_ca", "");
  } else if (tls.client_auth_type == ClientAuthType::verify_client_cert_if_given ||
             tls.client_auth_type == ClientAuthType::require_and_verify_client_cert) {
    // No client CA: verified against the system's CAs, as Go verifies
    // against its system roots (OpenSSL's default paths: /etc/ssl/certs).
    context.set_default_verify_paths(error);
    if (error)
      fail(config.file, "tls_server_config.client_auth_type",
           "cannot load the system's CAs to verify client certificates against: " +
               openssl_reason(error));
  }
}

// Go's crypto/tls defaults (Go 1.22 and later): the TLS 1.0-1.2 suites
// without RSA key exchange, 3DES, RC4 or CBC with SHA-256, AES-GCM first;
// the three TLS 1.3 suites; the curves X25519, P-256, P-384, P-521.
constexpr const char* kGoTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA:"
    "ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES256-SHA";
constexpr const char* kGoTls13Ciphers =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* kGoGroups = "X25519:P-256:P-384:P-521";

void set_protocol(ssl::context& context, const WebConfig& config) {
  SSL_CTX* native = context.native_handle();
  const TlsServerConfig& tls = config.tls;
  int min_version = openssl_version(tls.min_version);
  std::string ciphers;
  for (const CipherSuite& suite : tls.cipher_suites) {
    if (suite.tls13) continue;  // as in Go, TLS 1.3's suites are not configurable
    if (!ciphers.empty()) ciphers += ':';
    ciphers += suite.openssl_name;
  }
  if (tls.cipher_suites.empty()) {
    ciphers = kGoTls12Ciphers;
  } else if (ciphers.empty()) {
    // Only TLS 1.3 names: Go then has no suite for TLS 1.2 and older, so
    // only TLS 1.3 handshakes succeed. OpenSSL's defaults must not fill in.
    if (tls.max_version < TlsVersion::tls13) {
      fail(config.file, "tls_server_config.cipher_suites",
           "names only TLS 1.3 suites, which do not apply up to max_version " +
               std::string(tls_version_name(tls.max_version)) + ": no handshake could succeed");
    }
    min_version = TLS1_3_VERSION;
  }
  SSL_CTX_set_min_proto_version(native, min_version);
  // OpenSSL 3 refuses TLS 1.0 and 1.1 above security level 0 (their
  // handshakes sign with SHA-1); Go serves them when min_version asks.
  if (min_version < TLS1_2_VERSION) SSL_CTX_set_security_level(native, 0);
  SSL_CTX_set_max_proto_version(native, openssl_version(tls.max_version));
  // With TLS 1.2 off there is no TLS 1.2 list to set (OpenSSL refuses an
  // empty one).
  if (!ciphers.empty() && SSL_CTX_set_cipher_list(native, ciphers.c_str()) != 1) {
    ERR_clear_error();
    fail(config.file, "tls_server_config.cipher_suites",
         "OpenSSL accepts none of the cipher suites");
  }
  if (SSL_CTX_set_ciphersuites(native, kGoTls13Ciphers) != 1) {
    ERR_clear_error();
    fail(config.file, "tls_server_config.cipher_suites", "OpenSSL refuses the TLS 1.3 suites");
  }
  if (tls.prefer_server_cipher_suites) SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE);
  std::string groups;
  for (const Curve& curve : tls.curve_preferences) {
    if (!groups.empty()) groups += ':';
    groups += curve.openssl_group;
  }
  if (groups.empty()) groups = kGoGroups;
  if (SSL_CTX_set1_groups_list(native, groups.c_str()) != 1) {
    ERR_clear_error();
    fail(config.file, "tls_server_config.curve_preferences", "OpenSSL accepts none of the curves");
  }
}

std::unique_ptr<ssl::context> make_tls_context(const WebConfig& config, const TlsFiles& files) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::single_dh_use);
  // No session resumption across a reload that changed who may connect.
  SSL_CTX_set_session_cache_mode(context->native_handle(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_TICKET);
  // No user data: Boost.Asio's context deletes a non-null one as its own.
  SSL_CTX_set_default_passwd_cb(context->native_handle(), refuse_passphrase);
  SSL_CTX_set_default_passwd_cb_userdata(context->native_handle(), nullptr);
  set_protocol(*context, config);
  load_credentials(*context, config, files);
  set_client_verification(*context, config.tls);
  return context;
}

using FileStamp = EndpointSecurityWatch::FileStamp;

// The directory events that may change a watched file: written, renamed or
// linked in or out, created, removed, its mode or owner changed.
constexpr std::uint32_t kDirectoryEvents =
    IN_CLOSE_WRITE | IN_MODIFY | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | IN_ATTRIB;
// A change seen is looked at again this much later (or after the check
// interval when shorter), and applied when it held still: a writer's burst
// is over by then.
constexpr std::chrono::milliseconds kSettle{50};

void drain(int fd) noexcept {
  char buffer[4096];
  while (::read(fd, buffer, sizeof buffer) > 0) {
  }
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

std::string summary_of(const WebConfig& config);

FileStamp stamp_of(const struct stat& info) noexcept {
  FileStamp stamp;
  stamp.device = info.st_dev;
  stamp.inode = info.st_ino;
  stamp.size = info.st_size;
  stamp.modified = info.st_mtim;
  stamp.changed = info.st_ctim;
  return stamp;
}

// stat(2) never blocks on a FIFO; a file that cannot be examined has the
// stamp of none.
FileStamp stamp_of(const std::string& path) noexcept {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return FileStamp{};
  return stamp_of(info);
}

bool same_time(const timespec& a, const timespec& b) noexcept {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// A file that changed while it was read (a writer still at work): the
// reload waits for it to settle rather than judge half of it.
struct ChangedWhileRead {};

}  // namespace

// Reads the files a security is built from: each opened without blocking (a
// FIFO or a device is refused, never waited on), read whole up to the
// configuration file limit, and stamped as it was before the read.
class StampedReader {
 public:
  std::vector<std::string> paths;  // in the order read
  std::vector<FileStamp> stamps;   // the same order
  bool settled = true;             // no file changed while it was read

  // Throws FileReadError.
  std::string read(const std::string& path) {
    // Stamped before it is opened: a refusal keeps this stamp, so a file
    // replaced while it was judged is judged again (and one that cannot be
    // opened has its stamp too).
    paths.push_back(path);
    stamps.push_back(stamp_of(path));
    const FileHandle file = open_regular_file(path);
    struct stat before {};
    if (::fstat(file.get(), &before) != 0) {
      throw FileReadError(std::string("cannot be examined: ") + std::strerror(errno));
    }
    if (!(stamp_of(before) == stamps.back())) settled = false;
    std::string contents = read_bounded(file, kConfigurationFileLimit);
    struct stat after {};
    if (::fstat(file.get(), &after) != 0 || !(stamp_of(after) == stamps.back())) settled = false;
    return contents;
  }
};

namespace {

// What building a security produced, besides the security.
struct Built {
  std::shared_ptr<EndpointSecurity> security;
  WebConfig config;
};

// Reads file and the files it names through reader and builds the security.
// Throws StartupError naming the file and the key.
Built build_security(const std::string& file, StampedReader& reader) {
  std::string text;
  try {
    text = reader.read(file);
  } catch (const FileReadError& error) {
    throw StartupError({"prometheus", file, flag_spelling(metrics_flag(&Options::web_config))},
                       std::string("the web configuration ") + error.what());
  }
  Built built;
  built.config = parse_web_config(text, file);
  const WebConfig& config = built.config;
  TlsFiles files;
  // The private key's bytes are wiped once OpenSSL holds the key.
  struct Wipe {
    std::string& key;
    ~Wipe() { OPENSSL_cleanse(key.data(), key.size()); }
  } wipe{files.key};
  const std::tuple<const std::string&, std::string&, const char*, const char*> named[] = {
      {config.tls.cert_file, files.cert, "tls_server_config.cert_file", "certificate"},
      {config.tls.key_file, files.key, "tls_server_config.key_file", "private key"},
      {config.tls.client_ca_file, files.client_ca, "tls_server_config.client_ca_file", "client CA"},
  };
  for (const auto& [path, contents, key, what] : named) {
    if (path.empty()) continue;
    try {
      contents = reader.read(path);
    } catch (const FileReadError& error) {
      fail(file, key,
           std::string("cannot load the ") + what + " '" + path + "': the file " + error.what());
    }
  }
  auto security = std::make_shared<EndpointSecurity>(config.basic_auth_users);
  security->file = file;
  security->source_files.assign(reader.paths.begin() + 1, reader.paths.end());
  if (config.tls_enabled) security->tls = make_tls_context(config, files);
  security->client_allowed_sans = config.tls.client_allowed_sans;
  security->client_auth_type = config.tls.client_auth_type;
  security->strength = security_strength_of(config);
  security->summary = summary_of(config);
  security->headers = config.http.headers;
  security->rate_limit = config.rate_limit;
  built.security = std::move(security);
  return built;
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
  StampedReader reader;
  return build_security(file, reader).security;
}

const char* go_default_tls12_ciphers() noexcept { return kGoTls12Ciphers; }

std::string security_switched_off(const EndpointSecurity& before, const EndpointSecurity& after) {
  return security_weakened_text(before.strength, after.strength);
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
                                             std::chrono::milliseconds check_interval,
                                             bool own_thread)
    : file_(std::move(file)), check_interval_(check_interval) {
  if (file_.empty()) {
    current_ = open_endpoint_security();
    return;
  }
  // At startup an empty file is accepted, as exporter-toolkit accepts it.
  // The stamps are those from before each read: a change during the read
  // is seen by the first look.
  StampedReader reader;
  Built built = build_security(file_, reader);  // throws StartupError
  warn_of_readable_key(built.config);
  current_ = std::move(built.security);
  watched_ = std::move(reader.paths);
  stamps_ = std::move(reader.stamps);
  if (!own_thread) return;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    throw StartupError(
        {"prometheus", file_, flag_spelling(metrics_flag(&Options::web_config))},
        std::string("cannot create the reload watch's eventfd: ") + std::strerror(errno));
  }
  // Watched before the thread starts: no change after the constructor is
  // missed. Without inotify (none left, or a file system without it) the
  // periodic looks remain.
  notify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  watch_directories();
  thread_ = std::thread([this] { run(); });
}

EndpointSecurityWatch::~EndpointSecurityWatch() {
  if (stop_fd_ >= 0) {
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (notify_fd_ >= 0) ::close(notify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

// Adds the directories of the files watched now (adding one again is a
// no-op); those of files no longer named stay, costing a look at most.
void EndpointSecurityWatch::watch_directories() {
  if (notify_fd_ < 0) return;
  MutexLock lock(look_mutex_);
  for (const std::string& path : watched_)
    ::inotify_add_watch(notify_fd_, directory_of(path).c_str(), kDirectoryEvents);
}

void EndpointSecurityWatch::run() {
  // At least 10 ms between periodic looks, whatever the interval says.
  const auto period = std::max(check_interval_, std::chrono::milliseconds(10));
  const auto settle = std::min(kSettle, period);
  bool settling = false;
  for (;;) {
    pollfd fds[2] = {{stop_fd_, POLLIN, 0}, {notify_fd_, POLLIN, 0}};
    const auto wait = settling ? settle : period;
    const int ready = ::poll(fds, notify_fd_ >= 0 ? 2 : 1, static_cast<int>(wait.count()));
    if (ready < 0 && errno != EINTR) break;
    if (ready > 0 && fds[0].revents != 0) break;
    if (ready > 0 && fds[1].revents != 0) drain(notify_fd_);
    try {
      settling = look_once();
      watch_directories();
    } catch (...) {
      // look() reports its own failures; nothing may end the watch.
      settling = false;
    }
  }
}

std::shared_ptr<const EndpointSecurity> EndpointSecurityWatch::current() const {
  MutexLock lock(current_mutex_);
  return current_;
}

void EndpointSecurityWatch::publish(std::shared_ptr<const EndpointSecurity> security) {
  std::shared_ptr<const EndpointSecurity> old;
  {
    MutexLock lock(current_mutex_);
    old = std::exchange(current_, std::move(security));
  }
  // old is released here, outside the lock (its TLS context may be the last
  // reference).
}

void EndpointSecurityWatch::look() { look_once(); }

bool EndpointSecurityWatch::look_once() {
  if (file_.empty()) return false;
  MutexLock lock(look_mutex_);
  std::vector<FileStamp> stamps;
  stamps.reserve(watched_.size());
  for (const std::string& path : watched_) stamps.push_back(stamp_of(path));
  if (stamps == stamps_) {
    pending_.reset();
    return false;
  }
  // A change is applied once the files are the same at two looks in a row:
  // a file still being written (truncated, then written) is waited for.
  if (!pending_ || !(*pending_ == stamps)) {
    pending_ = std::move(stamps);
    return true;
  }
  pending_.reset();
  rebuild();
  return false;
}

void EndpointSecurityWatch::rebuild() {
  StampedReader reader;
  try {
    Built built = build_security(file_, reader);
    if (!reader.settled) throw ChangedWhileRead{};
    if (built.config.empty) {
      throw StartupError({"prometheus", file_, flag_spelling(metrics_flag(&Options::web_config))},
                         "the web configuration is empty (a file being written?); to serve "
                         "plain HTTP without users on purpose, write '{}'");
    }
    const std::string off = security_switched_off(*current(), *built.security);
    if (!off.empty()) {
      // Security never weakens at reload: a file cut short, '{}' or a
      // deliberate lowering alike; a restart applies it.
      const StartupError weaker(
          {"prometheus", file_, flag_spelling(metrics_flag(&Options::web_config))},
          "it would switch off " + off +
              "; a running endpoint never lowers its security (a "
              "restart applies such a file)");
      refuse(weaker.what(), reader);
      // Counted after the line: a scraper that sees the count finds the line.
      refused_weaker_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    publish(std::move(built.security));
    watched_ = std::move(reader.paths);
    stamps_ = std::move(reader.stamps);
    reloads_.fetch_add(1, std::memory_order_relaxed);
    last_failure_.clear();
    write_log_line_to_stderr("tokenspeed-metrics: Prometheus endpoint: web configuration '" +
                             file_ + "' reloaded");
  } catch (const ChangedWhileRead&) {
    // Not settled: stamps_ stays as it was, so the next looks see the
    // change again and rebuild once it holds still.
  } catch (const std::exception& error) {
    refuse(error.what(), reader);
    failed_reloads_.fetch_add(1, std::memory_order_relaxed);
  }
}

// A change not applied: the last good security stays in force. Watched from
// now on: the files this version names (a missing certificate that appears
// is a change), as they were when read, so an unchanged refused file is not
// tried and counted again while one replaced during the judgement is. One line per distinct
// message: a file left as it is is not logged at every look. The message names file and key, never
// a secret.
void EndpointSecurityWatch::refuse(const std::string& message, const StampedReader& reader) {
  if (!reader.paths.empty()) {
    watched_ = reader.paths;
    stamps_ = reader.stamps;  // as judged: a newer version is a change
  } else {
    stamps_.clear();
    for (const std::string& path : watched_) stamps_.push_back(stamp_of(path));
  }
  if (message == last_failure_) return;
  last_failure_ = message;
  write_log_line_to_stderr(
      "tokenspeed-metrics: Prometheus endpoint: web configuration not reloaded, the previous "
      "one stays in force: " +
      message);
}

std::uint64_t EndpointSecurityWatch::reloads() const noexcept {
  return reloads_.load(std::memory_order_relaxed);
}

std::uint64_t EndpointSecurityWatch::failed_reloads() const noexcept {
  return failed_reloads_.load(std::memory_order_relaxed);
}

std::uint64_t EndpointSecurityWatch::refused_weaker() const noexcept {
  return refused_weaker_.load(std::memory_order_relaxed);
}

}  // namespace tokenspeed::metrics
