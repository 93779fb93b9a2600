/*
 * tokenspeed/kit/http_client.hpp — one HTTP POST at a time over libcurl, for
 * network outputs (OTLP/HTTP and /gRPC, remote write): keeps the connection alive
 * between requests, bounds every request by a deadline, ends it at once when
 * a stop flag turns true, and returns the status, Retry-After and a bounded
 * part of the body. TLS (a CA, a client certificate, the name verified, the
 * lowest version) and credentials (basic auth, a bearer token, headers whose
 * values are files), the files read again at each request so that they can
 * be rotated without a restart; a request signer called last (AWS
 * Signature V4: sigv4.hpp). Link libcurl (dependency('libcurl')).
 * HttpClient is the default HttpTransport, the interface kit::HttpExporter
 * posts through (a scripted one in tests, or a vendor's own HTTP stack).
 * Delivery thread only, except interrupt. Never logs, and no error it
 * returns quotes a credential.
 */
#ifndef TOKENSPEED_KIT_HTTP_CLIENT_HPP
#define TOKENSPEED_KIT_HTTP_CLIENT_HPP

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <iterator>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

struct HttpResponse {
  long status = 0;         // 0: no response (see error)
  std::string error;       // transport or TLS failure, timeout, stop, a credential file that cannot
                           // be read (nothing sent); empty when a response came
  bool timed_out = false;  // the deadline ended the request
  bool stopped = false;    // the stop flag ended the request
  std::string body;        // at most max_body bytes of the response body
  std::string content_type;
  std::optional<std::string> retry_after;  // the Retry-After header, as sent
  /* A gRPC answer's grpc-status, grpc-message (percent-encoded) and
   * grpc-status-details-bin (base64), as sent, from the trailers or the
   * headers (kit/grpc.hpp reads them); no grpc-status: nullopt. */
  std::optional<std::string> grpc_status;
  std::string grpc_message;
  std::string grpc_status_details;
};

struct HttpRequest {
  std::string_view url;
  std::string_view body;
  std::vector<std::string> headers;     // "Name: value"
  std::vector<std::string> connect_to;  // CURLOPT_CONNECT_TO entries "HOST:PORT:TO_HOST:TO_PORT"
  // HTTP basic authentication, encoded by libcurl; none when user is empty.
  std::string_view basic_auth_user;
  std::string_view basic_auth_password;
};

/* The lowest TLS version accepted (Prometheus' names TLS10 ... TLS13). */
enum class TlsVersion { kTls10 = 10, kTls11 = 11, kTls12 = 12, kTls13 = 13 };

/* TLS of an https:// URL (an http:// URL uses none of it). Files are PEM;
 * libcurl reads them at each new connection. */
struct HttpTlsOptions {
  std::string ca_file;    // CA certificates the server's is verified with; empty: the system's
  std::string cert_file;  // client certificate presented to the server (with key_file)
  std::string key_file;   // its private key
  /* The name the server's certificate must carry, also sent as SNI; empty:
   * the URL's host. The connection still goes to the URL's host and port,
   * and the Host header is still the URL's (libcurl's CONNECT_TO). */
  std::string server_name;
  bool insecure_skip_verify = false;  // no check of the server's certificate or name
  TlsVersion min_version = TlsVersion::kTls12;
};

/* The largest credential file read (a password, a token, a header value). */
inline constexpr std::size_t kMaxCredentialFileBytes = std::size_t{64} * 1024;

/* Reads the file at path into out as it is: a regular file of at most
 * kMaxCredentialFileBytes (a shared credentials file of several lines).
 * Returns "" or why not, naming the path and never the content (out then
 * wiped and empty). */
inline std::string read_secret_file(const std::string& path, std::string& out) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return "cannot read " + path + ": " + std::strerror(errno);
  struct stat info {};
  std::string problem;
  if (::fstat(fd, &info) != 0) {
    problem = "cannot read " + path + ": " + std::strerror(errno);
  } else if (!S_ISREG(info.st_mode)) {
    problem = path + " is not a regular file";
  } else if (static_cast<std::size_t>(info.st_size) > kMaxCredentialFileBytes) {
    problem = path + " is larger than " + std::to_string(kMaxCredentialFileBytes) + " bytes";
  } else {
    char buffer[4096];
    for (;;) {
      const ssize_t n = ::read(fd, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        problem = "cannot read " + path + ": " + std::strerror(errno);
        break;
      }
      if (n == 0) break;
      out.append(buffer, static_cast<std::size_t>(n));
      if (out.size() > kMaxCredentialFileBytes) {
        problem = path + " is larger than " + std::to_string(kMaxCredentialFileBytes) + " bytes";
        break;
      }
    }
    std::fill(std::begin(buffer), std::end(buffer), '\0');
  }
  ::close(fd);
  if (!problem.empty()) {
    std::fill(out.begin(), out.end(), '\0');
    out.clear();
  }
  return problem;
}

/* Reads the credential in the file at path into out: a regular file of at
 * most kMaxCredentialFileBytes, its trailing line breaks dropped, not empty
 * and without a line break left inside (it goes into a header). Returns ""
 * or why not, naming the path and never the content. */
inline std::string read_credential_file(const std::string& path, std::string& out) {
  std::string problem = read_secret_file(path, out);
  while (problem.empty() && !out.empty() && (out.back() == '\n' || out.back() == '\r'))
    out.pop_back();
  if (problem.empty() && out.empty()) problem = path + " is empty";
  if (problem.empty() && out.find_first_of("\r\n") != std::string::npos)
    problem = path + " has a line break before its end";
  if (!problem.empty()) {
    std::fill(out.begin(), out.end(), '\0');
    out.clear();
  }
  return problem;
}

/* Signs one request: given its method, URL, body and every header it will
 * carry ("Name: value" lines), adds the headers of its signature (AWS
 * Signature V4: kit/sigv4.hpp's SigV4Signer). Returns "" or why it cannot
 * (then nothing is sent), naming a setting or a file, never a secret. */
using HttpRequestSigner =
    std::function<std::string(std::string_view method, std::string_view url, std::string_view body,
                              std::vector<std::string>& headers)>;

/* As HttpRequestSigner, for a signer that may make a request of its own
 * first (temporary AWS credentials from STS: kit/sts_assume_role.hpp): it
 * is given the attempt's deadline and stop flag (may be null), and must
 * return by the deadline, and at once when *stop turns true. */
using HttpRequestSignerWithDeadline = std::function<std::string(
    std::string_view method, std::string_view url, std::string_view body,
    std::vector<std::string>& headers, std::chrono::steady_clock::time_point deadline,
    const std::atomic<bool>* stop)>;

/* What every request of one client shares: where it goes, the operator's
 * headers, TLS, credentials and how much of an answer is kept. Whoever
 * passes this struct through (kit::HttpExporter) needs no change for a new
 * connection setting. */
struct HttpClientOptions {
  std::string url;                   // http:// or https://, the full path included
  std::vector<std::string> headers;  // "Name: value", added to every request
  std::size_t max_response_body = std::size_t{64} * 1024;  // bytes of a response body kept
  HttpTlsOptions tls;                                      // https:// only
  /* Credentials, each file read at every request (read_credential_file): a
   * file that cannot be read fails the request before it is sent. */
  std::string basic_auth_username;       // with basic_auth_password_file: Authorization: Basic
  std::string basic_auth_password_file;  // the password
  std::string bearer_token_file;         // Authorization: Bearer <the file's content>
  std::vector<std::pair<std::string, std::string>> header_files;  // header name, file of its value
  /* Called on every request after every other header is in place (empty:
   * none); its failure fails the request before it is sent, like a
   * credential file that cannot be read. */
  HttpRequestSigner sign;
  /* The same, given the request's deadline and stop flag; called instead
   * of sign when set. */
  HttpRequestSignerWithDeadline sign_with_deadline;
  /* HTTP/2 only (gRPC, kit/grpc.hpp): an http:// URL speaks it at once
   * (prior knowledge), an https:// one asks for it in the TLS handshake
   * (ALPN h2); one connection per request. false: what libcurl chooses,
   * the connection kept between requests. */
  bool http2 = false;
};

/* What an exporter sends its requests through (kit::HttpExporter): one
 * POST to the exporter's receiver at a time. HttpClient below is the
 * default; a test gives a scripted one (HttpExporterOptions::transport), a
 * vendor may give its own HTTP stack. post returns the receiver's answer,
 * or status 0 and an error when none came (refused, timed out, stopped);
 * a throw counts as no answer, retried. Threading: post from one thread at
 * a time (the delivery thread), interrupt from any thread. */
class HttpTransport {
 public:
  using Clock = std::chrono::steady_clock;

  virtual ~HttpTransport() = default;

  /* POSTs body with content_headers (Content-Type, ...) after the
   * transport's own; returns by deadline, and at once when *stop turns true
   * (stop may be null). */
  virtual HttpResponse post(std::string_view body, const std::vector<std::string>& content_headers,
                            Clock::time_point deadline, const std::atomic<bool>* stop) = 0;

  /* Wakes a post in flight so that it looks at its stop flag now. */
  virtual void interrupt() noexcept {}

 protected:
  HttpTransport() = default;
  HttpTransport(const HttpTransport&) = default;
  HttpTransport& operator=(const HttpTransport&) = default;
};

/* Threading: post is called from one thread at a time (the delivery thread);
 * interrupt from any thread. */
class HttpClient : public HttpTransport {
 public:
  using Clock = HttpTransport::Clock;

  explicit HttpClient(HttpClientOptions options = {}) : options_(std::move(options)) {
    global_init();
    multi_ = curl_multi_init();
    easy_ = curl_easy_init();
    if (multi_ == nullptr || easy_ == nullptr) {
      release();
      throw std::runtime_error("cannot initialise libcurl");
    }
    try {
      if (!options_.tls.server_name.empty() && options_.url.rfind("https://", 0) == 0)
        route_to_server_name();
    } catch (...) {
      release();
      throw;
    }
  }
  ~HttpClient() override { release(); }

  /* curl_global_init, once per plugin, before the first handle. A
   * function-local static rather than std::call_once: call_once binds
   * pthread_once, GLIBC_2.34 when built on glibc 2.34 or later
   * (docs/plugin-authors.md, "Building a portable binary"). Each plugin
   * has its own copy of this static, and create_sink runs on each output's
   * own thread: two libcurl plugins may get here at once. libcurl makes
   * curl_global_init thread-safe from 7.84 (CURL_VERSION_THREADSAFE); for
   * older ones the call holds stderr's stdio lock, a recursive lock of
   * the C library that every plugin of the process shares. */
  static void global_init() noexcept {
    static const bool initialised = [] {
      flockfile(stderr);
      const bool ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
      funlockfile(stderr);
      return ok;
    }();
    (void)initialised;  // a failure shows as curl_multi_init's below
  }
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  const HttpClientOptions& options() const noexcept { return options_; }

  /* POSTs body to the options' URL with the options' headers, the
   * credentials (their files read now), then content_headers (Content-Type,
   * Content-Encoding, ...), keeping at most max_response_body bytes of the
   * answer; as the post below otherwise. A credential file that cannot be
   * read: nothing is sent, status 0 and an error naming the setting and the
   * file. */
  HttpResponse post(std::string_view body, const std::vector<std::string>& content_headers,
                    Clock::time_point deadline,
                    const std::atomic<bool>* stop = nullptr) noexcept override {
    HttpRequest request;
    HttpResponse response;
    std::string password;
    try {
      request.url = effective_url_.empty() ? options_.url : effective_url_;
      request.body = body;
      request.headers = options_.headers;
      if (!host_header_.empty()) request.headers.push_back(host_header_);
      if (!connect_to_.empty()) request.connect_to.push_back(connect_to_);
      response.error = add_credentials(request.headers, password);
      if (!response.error.empty()) {
        forget(request.headers);
        forget(password);
        return response;
      }
      if (!options_.basic_auth_password_file.empty()) {
        request.basic_auth_user = options_.basic_auth_username;
        request.basic_auth_password = password;
      }
      request.headers.insert(request.headers.end(), content_headers.begin(), content_headers.end());
      if (options_.sign_with_deadline || options_.sign) {
        try {
          response.error = options_.sign_with_deadline
                               ? options_.sign_with_deadline("POST", request.url, body,
                                                             request.headers, deadline, stop)
                               : options_.sign("POST", request.url, body, request.headers);
        } catch (const std::exception& e) {
          response.error = std::string("cannot sign the request: ") + e.what();
        }
        if (!response.error.empty()) {
          forget(request.headers);
          forget(password);
          return response;
        }
      }
      request.headers.emplace_back("Expect:");  // no 100-continue round trip
    } catch (...) {
      forget(request.headers);
      forget(password);
      response.error = "out of memory";
      return response;
    }
    response = post(request, deadline, stop, options_.max_response_body);
    forget(request.headers);
    forget(password);
    return response;
  }

  /* Wakes a post in flight so that it looks at its stop flag now. */
  void interrupt() noexcept override {
    if (multi_ != nullptr) curl_multi_wakeup(multi_);
  }

  /* POSTs request with the options' TLS; returns when the response is
   * complete, deadline passes or *stop turns true (stop may be null). Never
   * throws. */
  HttpResponse post(const HttpRequest& request, Clock::time_point deadline,
                    const std::atomic<bool>* stop = nullptr,
                    std::size_t max_body = std::size_t{64} * 1024) noexcept {
    HttpResponse response;
    Capture capture{&response, max_body};
    curl_slist* headers = nullptr;
    curl_slist* connect_to = nullptr;
    char error_text[CURL_ERROR_SIZE] = {};
    bool added = false;
    try {
      const auto left = deadline - Clock::now();
      if (!ready_to_send(left, stop, response)) return response;
      append_all(headers, request.headers);
      append_all(connect_to, request.connect_to);
      set_transfer(request, headers, connect_to, capture, error_text, left);
      set_basic_auth(request);
      if (curl_multi_add_handle(multi_, easy_) != CURLM_OK)
        throw std::runtime_error("curl_multi_add_handle failed");
      added = true;
      if (const std::optional<CURLcode> result = run_transfer(deadline, stop, response))
        read_result(*result, error_text, response);
    } catch (const std::exception& e) {
      response.error = e.what();
    } catch (...) {
      response.error = "unknown failure";
    }
    release_transfer(added);
    curl_slist_free_all(headers);
    curl_slist_free_all(connect_to);
    if (!response.error.empty()) response.status = 0;
    return response;
  }

 private:
  /* Adds the credential headers (header_files, then a bearer token) and
   * reads the basic-auth password into password; returns "" or why a file
   * could not be read, naming its setting and path. */
  std::string add_credentials(std::vector<std::string>& headers, std::string& password) const {
    std::string value;
    for (const auto& [name, path] : options_.header_files) {
      std::string problem = read_credential_file(path, value);
      if (!problem.empty()) return "'header_files': '" + name + "': " + problem;
      headers.push_back(name + ": " + value);
      forget(value);
    }
    if (!options_.basic_auth_password_file.empty()) {
      std::string problem = read_credential_file(options_.basic_auth_password_file, password);
      if (!problem.empty()) return "'basic_auth.password_file': " + problem;
    }
    if (!options_.bearer_token_file.empty()) {
      std::string problem = read_credential_file(options_.bearer_token_file, value);
      if (!problem.empty()) return "'bearer_token_file': " + problem;
      headers.push_back("Authorization: Bearer " + value);
      forget(value);
    }
    return {};
  }

  /* Overwrites what held a credential before it is freed. */
  static void forget(std::string& text) noexcept {
    volatile char* bytes = text.data();
    for (std::size_t i = 0; i < text.size(); ++i) bytes[i] = '\0';
    text.clear();
  }
  static void forget(std::vector<std::string>& lines) noexcept {
    for (std::string& line : lines) forget(line);
  }

  /* The options' TLS on the easy handle (after curl_easy_reset). */
  void apply_tls() noexcept {
    const HttpTlsOptions& tls = options_.tls;
    if (!tls.ca_file.empty()) curl_easy_setopt(easy_, CURLOPT_CAINFO, tls.ca_file.c_str());
    if (!tls.cert_file.empty()) {
      curl_easy_setopt(easy_, CURLOPT_SSLCERT, tls.cert_file.c_str());
      curl_easy_setopt(easy_, CURLOPT_SSLCERTTYPE, "PEM");
    }
    if (!tls.key_file.empty()) curl_easy_setopt(easy_, CURLOPT_SSLKEY, tls.key_file.c_str());
    if (tls.insecure_skip_verify) {
      curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYPEER, 0L);
      curl_easy_setopt(easy_, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    long version = CURL_SSLVERSION_TLSv1_2;
    switch (tls.min_version) {
      case TlsVersion::kTls10:
        version = CURL_SSLVERSION_TLSv1_0;
        break;
      case TlsVersion::kTls11:
        version = CURL_SSLVERSION_TLSv1_1;
        break;
      case TlsVersion::kTls12:
        version = CURL_SSLVERSION_TLSv1_2;
        break;
      case TlsVersion::kTls13:
        version = CURL_SSLVERSION_TLSv1_3;
        break;
    }
    curl_easy_setopt(easy_, CURLOPT_SSLVERSION, version);
  }

  /* tls.server_name: the URL asked for names server_name (so that SNI and
   * the certificate check use it), CONNECT_TO sends the connection to the
   * URL's own host and port, and the Host header stays the URL's. */
  void route_to_server_name() {
    CURLU* parts = curl_url();
    if (parts == nullptr) throw std::bad_alloc();
    std::string host, port, explicit_port, url;
    bool ok = curl_url_set(parts, CURLUPART_URL, options_.url.c_str(), 0) == CURLUE_OK;
    const auto get = [&](CURLUPart part, unsigned flags, std::string& out) {
      char* text = nullptr;
      if (curl_url_get(parts, part, &text, flags) != CURLUE_OK) return false;
      out = text;
      curl_free(text);
      return true;
    };
    ok = ok && get(CURLUPART_HOST, 0, host) && get(CURLUPART_PORT, CURLU_DEFAULT_PORT, port);
    const bool has_port = ok && get(CURLUPART_PORT, 0, explicit_port);
    ok =
        ok && curl_url_set(parts, CURLUPART_HOST, options_.tls.server_name.c_str(), 0) == CURLUE_OK;
    ok = ok && get(CURLUPART_URL, 0, url);
    curl_url_cleanup(parts);
    if (!ok) {
      throw std::invalid_argument("cannot address " + options_.url + " as TLS server name " +
                                  options_.tls.server_name);
    }
    effective_url_ = url;
    connect_to_ = options_.tls.server_name + ":" + port + ":" + host + ":" + port;
    host_header_ = "Host: " + host + (has_port ? ":" + explicit_port : "");
  }

  struct Capture {
    HttpResponse* response;
    std::size_t max_body;

    static size_t body(char* data, size_t size, size_t count, void* self) noexcept {
      auto* capture = static_cast<Capture*>(self);
      const size_t bytes = size * count;
      std::string& out = capture->response->body;
      try {
        if (out.size() < capture->max_body)
          out.append(data, std::min(bytes, capture->max_body - out.size()));
      } catch (...) {  // out of memory: the answer is quoted shorter; the status still counts
      }
      return bytes;
    }

    static size_t header(char* data, size_t size, size_t count, void* self) noexcept {
      auto* capture = static_cast<Capture*>(self);
      const size_t bytes = size * count;
      try {
        std::string_view line(data, bytes);
        if (line.rfind("HTTP/", 0) == 0) {  // a new response (after 100 Continue)
          capture->response->retry_after.reset();
          capture->response->content_type.clear();
          capture->response->grpc_status.reset();
          capture->response->grpc_message.clear();
          capture->response->grpc_status_details.clear();
          return bytes;
        }
        const std::size_t colon = line.find(':');
        if (colon == std::string_view::npos) return bytes;
        std::string name(line.substr(0, colon));
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
          value.remove_prefix(1);
        while (!value.empty() &&
               (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
          value.remove_suffix(1);
        if (name == "retry-after") capture->response->retry_after = std::string(value);
        if (name == "content-type") capture->response->content_type = std::string(value);
        if (name == "grpc-status") capture->response->grpc_status = std::string(value);
        if (name == "grpc-message") capture->response->grpc_message = std::string(value);
        if (name == "grpc-status-details-bin")
          capture->response->grpc_status_details = std::string(value);
      } catch (...) {  // out of memory: the request is judged by its status alone
      }
      return bytes;
    }
  };

  /* False, with the response saying why, when the stop flag is already set
   * or no time is left of the deadline (left: the time to it). */
  static bool ready_to_send(Clock::duration left, const std::atomic<bool>* stop,
                            HttpResponse& response) {
    if (stop != nullptr && stop->load(std::memory_order_acquire)) {
      response.stopped = true;
      response.error = "stopped before sending";
      return false;
    }
    if (left <= Clock::duration::zero()) {
      response.timed_out = true;
      response.error = "no time left to send";
      return false;
    }
    return true;
  }

  static void append_all(curl_slist*& list, const std::vector<std::string>& entries) {
    for (const std::string& entry : entries) {
      curl_slist* grown = curl_slist_append(list, entry.c_str());
      if (grown == nullptr) throw std::bad_alloc();
      list = grown;
    }
  }

  /* The easy handle set afresh for request: its URL, body and headers, where
   * the answer goes, the time left as its timeouts, HTTP/2 and TLS. The
   * lists and error_text must outlive the transfer. */
  void set_transfer(const HttpRequest& request, curl_slist* headers, curl_slist* connect_to,
                    Capture& capture, char* error_text, Clock::duration left) {
    const std::string url(request.url);
    curl_easy_reset(easy_);
    curl_easy_setopt(easy_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy_, CURLOPT_POST, 1L);
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(easy_, CURLOPT_POSTFIELDSIZE_LARGE,
                     static_cast<curl_off_t>(request.body.size()));
    curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(easy_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy_, CURLOPT_WRITEFUNCTION, &Capture::body);
    curl_easy_setopt(easy_, CURLOPT_WRITEDATA, &capture);
    curl_easy_setopt(easy_, CURLOPT_HEADERFUNCTION, &Capture::header);
    curl_easy_setopt(easy_, CURLOPT_HEADERDATA, &capture);
    const long ms = static_cast<long>(
        std::max<int64_t>(1, std::chrono::duration_cast<std::chrono::milliseconds>(left).count()));
    curl_easy_setopt(easy_, CURLOPT_TIMEOUT_MS, ms);
    curl_easy_setopt(easy_, CURLOPT_CONNECTTIMEOUT_MS, ms);
    curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, error_text);
    if (connect_to != nullptr) curl_easy_setopt(easy_, CURLOPT_CONNECT_TO, connect_to);
    if (options_.http2) {
      curl_easy_setopt(easy_, CURLOPT_HTTP_VERSION,
                       static_cast<long>(CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE));
      // A connection per request: libcurl 7.88 (Debian 12's) fails the
      // second request on a kept HTTP/2 connection ("Error in the HTTP2
      // framing layer").
      curl_easy_setopt(easy_, CURLOPT_FORBID_REUSE, 1L);
    }
    apply_tls();
  }

  void set_basic_auth(const HttpRequest& request) {
    if (request.basic_auth_user.empty()) return;
    // libcurl encodes the credentials and keeps its own copies (until the
    // next reset); ours, NUL-terminated for it, are wiped at once.
    std::string user(request.basic_auth_user);
    std::string password(request.basic_auth_password);
    curl_easy_setopt(easy_, CURLOPT_HTTPAUTH, static_cast<long>(CURLAUTH_BASIC));
    curl_easy_setopt(easy_, CURLOPT_USERNAME, user.c_str());
    curl_easy_setopt(easy_, CURLOPT_PASSWORD, password.c_str());
    forget(password);
  }

  /* Drives the added transfer until it is done: its result, or nullopt with
   * the response saying why when the stop flag or the deadline ended it. */
  std::optional<CURLcode> run_transfer(Clock::time_point deadline, const std::atomic<bool>* stop,
                                       HttpResponse& response) {
    int running = 1;
    while (true) {
      if (curl_multi_perform(multi_, &running) != CURLM_OK)
        throw std::runtime_error("curl_multi_perform failed");
      std::optional<CURLcode> result;
      int queued = 0;
      while (CURLMsg* message = curl_multi_info_read(multi_, &queued)) {
        if (message->msg == CURLMSG_DONE) result = message->data.result;
      }
      if (result) return result;
      if (stop != nullptr && stop->load(std::memory_order_acquire)) {
        response.stopped = true;
        response.error = "stopped while the request was in flight";
        return std::nullopt;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        response.timed_out = true;
        response.error = "no response within the timeout";
        return std::nullopt;
      }
      // Bounded waits: a stop flag set without interrupt is seen within 50 ms.
      const auto wait = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(50));
      curl_multi_poll(
          multi_, nullptr, 0,
          static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(wait).count()) + 1,
          nullptr);
    }
  }

  /* The status of a finished transfer, or why it failed. */
  void read_result(CURLcode result, char* error_text, HttpResponse& response) {
    if (result == CURLE_OK) {
      curl_easy_getinfo(easy_, CURLINFO_RESPONSE_CODE, &response.status);
      return;
    }
    response.timed_out = result == CURLE_OPERATION_TIMEDOUT;
    response.error = curl_easy_strerror(result);
    // libcurl's detail: which certificate check failed, which port refused.
    error_text[CURL_ERROR_SIZE - 1] = '\0';
    if (error_text[0] != '\0' && response.error != error_text)
      response.error += std::string(": ") + error_text;
    response.status = 0;
  }

  /* The easy handle out of the multi handle (when added) and rid of the
   * transfer's lists and error buffer, which are freed next. */
  void release_transfer(bool added) noexcept {
    if (added) curl_multi_remove_handle(multi_, easy_);
    if (easy_ != nullptr) {
      curl_easy_setopt(easy_, CURLOPT_HTTPHEADER, nullptr);
      curl_easy_setopt(easy_, CURLOPT_CONNECT_TO, nullptr);
      curl_easy_setopt(easy_, CURLOPT_ERRORBUFFER, nullptr);
    }
  }

  void release() noexcept {
    if (easy_ != nullptr) curl_easy_cleanup(easy_);
    if (multi_ != nullptr) curl_multi_cleanup(multi_);
    easy_ = nullptr;
    multi_ = nullptr;
  }

  const HttpClientOptions options_;
  std::string effective_url_;  // tls.server_name: the URL naming it; else empty
  std::string connect_to_;     // tls.server_name: where it really goes
  std::string host_header_;    // tls.server_name: the URL's own host
  CURLM* multi_ = nullptr;
  CURL* easy_ = nullptr;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_HTTP_CLIENT_HPP
