// prometheus_endpoint.cpp — Boost.Beast server for /metrics: accept (evicting
// the longest-waiting connection at the limit), read with deadlines and a size
// bound, answer, keep alive, gzip with zlib. Scrapes render on threads of
// their own, so a slow render never holds up accepting, evicting or closing
// a connection. Never blocks a producer: it only calls the scrape handler.
#include "prometheus/prometheus_endpoint.hpp"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <variant>
#include <vector>

#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <tokenspeed/kit/gzip.hpp>

#include "prometheus/credential_check_queue.hpp"
#include "prometheus/endpoint_security.hpp"
#include "prometheus/prometheus_exposition.hpp"
#include "prometheus/request_rate_limit.hpp"
#include "core/fault_log.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

std::string_view trim(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

bool iequals(std::string_view a, std::string_view b) noexcept {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) {
      return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
    };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// The q value of one Accept-Encoding element ("gzip;q=0.5"); 1 when absent.
double quality(std::string_view params) noexcept {
  while (!params.empty()) {
    const std::size_t semi = params.find(';');
    std::string_view param = trim(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      std::string value(trim(param.substr(2)));
      char* end = nullptr;
      const double q = std::strtod(value.c_str(), &end);
      return end == value.c_str() ? 0.0 : q;
    }
  }
  return 1.0;
}

}  // namespace

bool accepts_gzip(std::string_view header) noexcept {
  std::optional<double> gzip_q;
  std::optional<double> any_q;
  while (!header.empty()) {
    const std::size_t comma = header.find(',');
    std::string_view element = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    const std::size_t semi = element.find(';');
    const std::string_view coding = trim(element.substr(0, semi));
    const double q = semi == std::string_view::npos ? 1.0 : quality(element.substr(semi + 1));
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip"))
      gzip_q = q;
    else if (coding == "*")
      any_q = q;
  }
  if (gzip_q) return *gzip_q > 0;
  return any_q && *any_q > 0;
}

namespace {
class Session;

// One render of the exposition, shared by every request that waited for it.
struct Rendered {
  bool failed = false;
  std::string body;     // the exposition, or the error's text when failed
  std::string gzipped;  // the body gzip-encoded, when a waiting request accepts gzip
};

// A request for /metrics waiting for the next render.
struct ScrapeWaiter {
  std::shared_ptr<Session> session;
  bool gzip = false;
};
}  // namespace

struct PrometheusEndpoint::Impl {
  PrometheusEndpointOptions options;
  ScrapeHandler handler;
  std::atomic<std::uint64_t> accepted{0}, rejected{0}, evicted{0}, requests{0}, idle_timeouts{0},
      timeouts{0}, oversized{0}, bad_requests{0}, tls_handshake_failures{0}, unauthorized{0},
      rate_limited{0}, checks_refused{0};
  std::atomic<std::size_t> open{0};  // sessions alive (evicted ones until they are gone)

  // A handler of the I/O threads that threw (the endpoint keeps serving):
  // at most one line per 10 s, with the count since the last one.
  std::mutex handler_log_mutex;
  FaultLog handler_log{"Prometheus endpoint", std::chrono::seconds(10), {}};
  void log_handler_exception() noexcept;
  // A request refused for its credentials, or because the checking queue
  // is full: the same log, one line per 10 s with the count (never a user
  // name or password: either may be a secret).
  void log_unauthorized() noexcept;
  void log_checks_refused() noexcept;

  // The web configuration in force (TLS, users, headers, rate limit).
  std::optional<EndpointSecurityWatch> security;
  // The web configuration's rate_limit, one bucket for authenticated
  // requests and one for the others.
  RequestRateLimit rate_limit;

  // The admitted sessions, for eviction at the limit. Guarded by
  // sessions_mutex, as are each session's waiting fields and `admitted`.
  std::mutex sessions_mutex;
  std::list<std::weak_ptr<Session>> sessions;
  std::size_t admitted = 0;  // sessions in the list not chosen for eviction

  // Scrapes waiting for a render. A render thread takes every waiting
  // request at once and answers them all from one render, so a burst of
  // scrapes costs about one render per render thread, not one per request.
  std::mutex render_mutex;
  std::condition_variable render_cv;
  std::deque<ScrapeWaiter> scrape_waiters;
  bool render_stop = false;

  std::mutex done_mutex;
  std::condition_variable done_cv;
  unsigned finished = 0;  // server and render threads that returned
  bool stopped = false;
  std::vector<std::thread> threads;
  unsigned short bound_port = 0;
  std::string bound_host;

  // Declared last: destroyed first, releasing every session before the
  // members above go away.
  // stop() destroys them once the threads are joined, which closes every
  // open connection (their sessions live in pending handlers).
  std::optional<asio::io_context> io{std::in_place};
  std::optional<tcp::acceptor> acceptor{std::in_place, *io};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  // Checks basic-auth passwords, one bcrypt at a time, off the I/O threads
  // (a flood of wrong passwords costs one core, never the accept loop), at
  // most options.max_pending_credential_checks at once.
  // Declared after io: stopped and destroyed before it, with the sessions
  // its pending checks hold.
  std::optional<CredentialCheckQueue> credential_checks;

  void do_accept();
  void admit(tcp::socket socket);
  // Under sessions_mutex: chooses the session that has waited longest
  // without a complete request (or for its credential check), among those
  // that had a request refused first, and marks it evicted; null when none
  // waits.
  // Every session it looks at is kept in `seen`, so that none is destroyed
  // (which takes sessions_mutex) before the caller lets the mutex go.
  std::shared_ptr<Session> choose_eviction_locked(std::vector<std::shared_ptr<Session>>& seen);
  // The answer to a request other than a scrape (404, 405); nullopt for a
  // GET or HEAD of /metrics, which waits for a render (request_scrape).
  std::optional<http::response<http::string_body>> respond_at_once(
      const http::request<http::string_body>& request);
  // Queues session for the next render; it is answered on its own strand.
  void request_scrape(std::shared_ptr<Session> session, bool gzip);
  void render_loop();
  void thread_finished();
};

namespace {

using Clock = std::chrono::steady_clock;

// What a closing connection reads and discards at most (see linger()).
constexpr std::size_t kMaxLingerBytes = std::size_t{1} << 20;

// One connection. Threading: its handlers run on its own strand; the fields
// marked "sessions_mutex" are also read by the acceptor when it looks for a
// connection to evict.
// A connection's stream: plain TCP, or TLS over it when the web
// configuration in force at accept time asks for TLS.
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Decodes the credentials of an "Authorization: Basic ..." header value;
// false when it is not one.
bool decode_basic_credentials(std::string_view value, std::string& user, std::string& password) {
  constexpr std::string_view scheme = "basic ";
  if (value.size() <= scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return false;
  }
  value = trim(value.substr(scheme.size()));
  if (value.empty() || value.size() % 4 != 0 || value.size() > 4096) return false;
  std::string decoded(value.size() / 4 * 3, '\0');
  const int length = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(decoded.data()),
                                     reinterpret_cast<const unsigned char*>(value.data()),
                                     static_cast<int>(value.size()));
  if (length < 0) return false;
  // EVP_DecodeBlock counts the bytes of the padding as decoded zeros.
  std::size_t size = static_cast<std::size_t>(length);
  if (value.back() == '=') --size;
  if (value.size() >= 2 && value[value.size() - 2] == '=') --size;
  decoded.resize(size);
  const std::size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  user = decoded.substr(0, colon);
  password = decoded.substr(colon + 1);
  OPENSSL_cleanse(decoded.data(), decoded.size());
  return true;
}

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, PrometheusEndpoint::Impl& server,
          std::shared_ptr<const EndpointSecurity> security)
      : stream_(plain_or_tls(std::move(socket), *security)),
        buffer_(server.options.max_request_bytes + 1024),
        server_(server),
        security_(std::move(security)) {}
  ~Session() {
    {
      std::lock_guard lock(server_.sessions_mutex);
      if (registered_) {
        if (!evicted_) --server_.admitted;
        server_.sessions.erase(entry_);
      }
    }
    server_.open.fetch_sub(1, std::memory_order_relaxed);
  }

  // Called by the acceptor, under sessions_mutex.
  void register_locked(std::list<std::weak_ptr<Session>>::iterator entry) {
    entry_ = entry;
    registered_ = true;
    waiting_ = true;
    waiting_since_ = Clock::now();
  }
  bool waiting_locked() const noexcept { return waiting_ && !evicted_; }
  Clock::time_point waiting_since_locked() const noexcept { return waiting_since_; }
  bool refused_locked() const noexcept { return refused_; }
  void mark_evicted_locked() noexcept { evicted_ = true; }

  void start() {
    auto* tls = std::get_if<TlsStream>(&stream_);
    if (tls == nullptr) return wait_for_request();
    // A client that never finishes its handshake is a slow client: the same
    // deadline as a request's, and evictable meanwhile.
    tcp_layer().expires_after(server_.options.read_timeout);
    tls->async_handshake(ssl::stream_base::server,
                         beast::bind_front_handler(&Session::on_handshake, shared_from_this()));
  }

  // Posted to the session's strand by the acceptor: closes the connection,
  // which ends its pending read.
  void evict() {
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_layer().close();
  }

  beast::tcp_stream::executor_type executor() { return tcp_layer().get_executor(); }

  // Posted to the session's strand by a render thread: answers the scrape
  // the session read last.
  void on_rendered(const Rendered& rendered) {
    response_ = {};
    response_.version(scrape_version_);
    response_.keep_alive(scrape_keep_alive_);
    if (rendered.failed) {
      response_.result(http::status::internal_server_error);
      response_.set(http::field::content_type, "text/plain; charset=utf-8");
      response_.body() = "scrape failed: " + rendered.body + "\n";
      response_.prepare_payload();
      if (scrape_head_) response_.body().clear();  // the length stays: what GET would send
      return write_response();
    }
    response_.result(http::status::ok);
    response_.set(http::field::content_type,
                  beast::string_view(kExpositionContentType.data(), kExpositionContentType.size()));
    response_.set(http::field::vary, "Accept-Encoding");
    const std::string& body = scrape_gzip_ ? rendered.gzipped : rendered.body;
    if (scrape_gzip_) response_.set(http::field::content_encoding, "gzip");
    if (scrape_head_) {
      response_.content_length(body.size());  // the length a GET would send
    } else {
      response_.body() = body;
      response_.prepare_payload();
    }
    write_response();
  }

 private:
  static std::variant<PlainStream, TlsStream> plain_or_tls(tcp::socket socket,
                                                           const EndpointSecurity& security) {
    if (security.tls == nullptr) return PlainStream(std::move(socket));
    return std::variant<PlainStream, TlsStream>(std::in_place_type<TlsStream>, std::move(socket),
                                                *security.tls);
  }

  // The TCP stream under TLS, or the stream itself.
  beast::tcp_stream& tcp_layer() {
    return std::visit(
        [](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); },
        stream_);
  }

  void on_handshake(beast::error_code ec) {
    if (ec == beast::error::timeout) {
      server_.timeouts.fetch_add(1, std::memory_order_relaxed);
      return;  // the stream is already closed by the timeout
    }
    if (!ec && !security_->client_allowed_sans.empty()) {
      const X509* peer = SSL_get0_peer_certificate(std::get<TlsStream>(stream_).native_handle());
      if (!certificate_has_allowed_san(peer, security_->client_allowed_sans))
        ec = asio::error::access_denied;
    }
    if (ec) {
      // Refused (no or an untrusted client certificate, a plain HTTP
      // request, no common version or cipher) or broken off; a connection
      // closed by eviction is counted as evicted alone.
      if (evicted()) return close();
      server_.tls_handshake_failures.fetch_add(1, std::memory_order_relaxed);
      if (is_plain_http_request(ec)) return answer_plain_http();
      return close();
    }
    wait_for_request();
  }

  // True when the handshake failed because the client's first bytes were an
  // HTTP request line ("GET ", "HEAD ", "POST ", "PUT "), not a TLS record:
  // OpenSSL then sends no alert, so the TCP stream is clean for plain text.
  static bool is_plain_http_request(const beast::error_code& ec) noexcept {
    if (ec.category() != asio::error::get_ssl_category()) return false;
    const auto code = static_cast<unsigned long>(static_cast<unsigned int>(ec.value()));
    return ERR_GET_LIB(code) == ERR_LIB_SSL && ERR_GET_REASON(code) == SSL_R_HTTP_REQUEST;
  }

  // What Go's net/http answers a plain HTTP request on its TLS port (then
  // it closes): written on the TCP layer under the TLS one, which never
  // began, and the connection closed as after an error (linger).
  void answer_plain_http() {
    static constexpr std::string_view kAnswer =
        "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";
    tcp_layer().expires_after(server_.options.write_timeout);
    asio::async_write(tcp_layer(), asio::buffer(kAnswer.data(), kAnswer.size()),
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec == beast::error::timeout)
                          self->server_.timeouts.fetch_add(1, std::memory_order_relaxed);
                        if (ec) return;
                        self->linger();
                      });
  }

  bool evicted() {
    std::lock_guard lock(server_.sessions_mutex);
    return evicted_;
  }

  // Sets whether the connection is without a complete request; false when
  // it was chosen for eviction meanwhile (the caller then stops).
  bool set_waiting(bool waiting) {
    std::lock_guard lock(server_.sessions_mutex);
    if (evicted_) return false;
    if (waiting && !waiting_) waiting_since_ = Clock::now();
    waiting_ = waiting;
    return true;
  }

  // Between requests: wait up to idle_timeout for the first byte of the
  // next one, unless a pipelined request is already buffered.
  void wait_for_request() {
    if (!set_waiting(true)) return;
    if (buffer_.size() > 0) return read_request();
    tcp_layer().expires_after(server_.options.idle_timeout);
    std::visit(
        [this](auto& stream) {
          stream.async_read_some(
              buffer_.prepare(std::min<std::size_t>(4096, buffer_.max_size())),
              beast::bind_front_handler(&Session::on_first_bytes, shared_from_this()));
        },
        stream_);
  }

  void on_first_bytes(beast::error_code ec, std::size_t bytes) {
    if (ec == beast::error::timeout) {
      server_.idle_timeouts.fetch_add(1, std::memory_order_relaxed);
      return;  // the stream is already closed by the timeout
    }
    if (ec == asio::error::eof) return close();
    if (ec) return;
    buffer_.commit(bytes);
    read_request();
  }

  void read_request() {
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_request_bytes));
    parser_->body_limit(server_.options.max_request_bytes);
    tcp_layer().expires_after(server_.options.read_timeout);
    std::visit(
        [this](auto& stream) {
          http::async_read(stream, buffer_, *parser_,
                           beast::bind_front_handler(&Session::on_read, shared_from_this()));
        },
        stream_);
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) return close();
    if (ec == beast::error::timeout) {
      server_.timeouts.fetch_add(1, std::memory_order_relaxed);
      return;  // the stream is already closed by the timeout
    }
    if (ec == http::error::header_limit || ec == http::error::body_limit ||
        ec == http::error::buffer_overflow) {
      server_.oversized.fetch_add(1, std::memory_order_relaxed);
      const bool headers = ec != http::error::body_limit;
      if (!set_waiting(false)) return;
      return send_error(headers ? http::status::request_header_fields_too_large
                                : http::status::payload_too_large);
    }
    if (ec) {
      if (ec == asio::error::operation_aborted || ec == asio::error::eof ||
          ec == asio::error::connection_reset) {
        return;
      }
      server_.bad_requests.fetch_add(1, std::memory_order_relaxed);
      if (!set_waiting(false)) return;
      return send_error(http::status::bad_request);
    }
    if (!set_waiting(false)) return;  // chosen for eviction just before
    server_.requests.fetch_add(1, std::memory_order_relaxed);
    // The configuration in force for this request: a reload since the
    // connection began applies to it (the TLS of the connection stays).
    security_ = server_.security->current();
    const http::request<http::string_body>& request = parser_->get();
    using Bucket = RequestRateLimit::Bucket;
    if (!security_->users.enabled()) {
      if (!admit(Bucket::authenticated)) return send_refusal(http::status::too_many_requests);
      return route();
    }
    std::string user;
    std::string password;
    const auto header = request[http::field::authorization];
    const bool decoded =
        decode_basic_credentials(std::string_view(header.data(), header.size()), user, password);
    // Remembered credentials (a SHA-256, microseconds) are the authorized
    // scraper's: its own bucket, which requests without them never drain.
    if (decoded && security_->users.verified_before(user, password)) {
      OPENSSL_cleanse(password.data(), password.size());
      if (!admit(Bucket::authenticated)) return send_refusal(http::status::too_many_requests);
      return route();
    }
    if (!admit(Bucket::unauthenticated)) {
      OPENSSL_cleanse(password.data(), password.size());
      return send_refusal(http::status::too_many_requests);
    }
    if (!decoded) return unauthorized();
    check_credentials(std::move(user), std::move(password));
  }

  // False (counted) when a request of bucket is over the rate limit.
  bool admit(RequestRateLimit::Bucket bucket) {
    if (server_.rate_limit.admit(security_->rate_limit, bucket, Clock::now())) return true;
    server_.rate_limited.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  // A check queued for the checking thread: skipped when the session was
  // evicted or its client went away meanwhile; its answer is posted back to
  // the session's strand. Holds the password until it is dropped, then wipes it.
  class Check final : public CredentialCheck {
   public:
    Check(std::shared_ptr<Session> session, std::string user, std::string password)
        : session_(std::move(session)),
          security_(session_->security_),
          user_(std::move(user)),
          password_(std::move(password)) {}
    ~Check() override {
      OPENSSL_cleanse(user_.data(), user_.size());
      OPENSSL_cleanse(password_.data(), password_.size());
    }
    bool wanted() override { return session_->check_wanted(); }
    void run() override {
      bool verified = false;
      try {
        verified = security_->users.verify(user_, password_);
      } catch (...) {
        session_->server_.log_handler_exception();  // refused, as a wrong password
      }
      auto executor = session_->executor();
      asio::post(executor, [session = session_, verified] { session->on_checked(verified); });
    }

   private:
    std::shared_ptr<Session> session_;
    std::shared_ptr<const EndpointSecurity> security_;  // the session's, when it asked
    std::string user_;
    std::string password_;
  };

  // bcrypt takes tens of milliseconds: on the checking thread. Meanwhile the
  // connection waits as if for a request (evictable), and a client that
  // closes it is noticed (its check then skipped).
  void check_credentials(std::string user, std::string password) {
    if (!set_waiting(true)) return;  // chosen for eviction just before
    auto check = std::make_unique<Check>(shared_from_this(), std::move(user), std::move(password));
    if (!server_.credential_checks->submit(std::move(check))) {
      if (!set_waiting(false)) return;
      server_.checks_refused.fetch_add(1, std::memory_order_relaxed);
      server_.log_checks_refused();
      return send_refusal(http::status::service_unavailable);
    }
    checking_ = true;
    watch_for_hangup();
  }

  // On the checking thread: false when the check is not worth running.
  bool check_wanted() {
    std::lock_guard lock(server_.sessions_mutex);
    return !evicted_ && !hung_up_;
  }

  void on_checked(bool verified) {
    checking_ = false;
    if (watching_) {
      watching_ = false;
      ++watch_generation_;  // a completion already queued is ignored
      beast::error_code ignored;
      tcp_layer().socket().cancel(ignored);  // the hang-up watch
    }
    if (!set_waiting(false)) return;  // evicted meanwhile: already closed
    if (hung_up()) return;
    if (verified) return route();
    unauthorized();
  }

  // Waits for the socket to become readable while a check is pending: an
  // end of stream or a reset there means the client went away (a client
  // that half-closes after its request is taken for gone too, as nginx does
  // when it is not told to ignore client aborts). Pipelined bytes end the
  // watch; they are read after the answer.
  void watch_for_hangup() {
    watching_ = true;
    tcp_layer().socket().async_wait(
        tcp::socket::wait_read,
        [self = shared_from_this(), generation = watch_generation_](beast::error_code ec) {
          if (generation != self->watch_generation_) return;  // a watch ended by on_checked
          self->watching_ = false;
          if (ec || !self->checking_) return;
          char byte = 0;
          const ssize_t peeked =
              ::recv(self->tcp_layer().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
          if (peeked > 0) return;
          if (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return self->watch_for_hangup();
          {
            std::lock_guard lock(self->server_.sessions_mutex);
            self->hung_up_ = true;
          }
          self->close();
        });
  }

  bool hung_up() {
    std::lock_guard lock(server_.sessions_mutex);
    return hung_up_;
  }

  void unauthorized() {
    server_.unauthorized.fetch_add(1, std::memory_order_relaxed);
    server_.log_unauthorized();
    send_refusal(http::status::unauthorized);
  }

  // 401, 429 or 503 on a connection that stays open: the client may try again.
  void send_refusal(http::status status) {
    {
      std::lock_guard lock(server_.sessions_mutex);
      refused_ = true;  // evicted before the others at the limit
    }
    const http::request<http::string_body>& request = parser_->get();
    response_ = {};
    response_.result(status);
    response_.version(request.version());
    response_.keep_alive(request.keep_alive());
    if (status == http::status::unauthorized)
      response_.set(http::field::www_authenticate, "Basic realm=\"tokenspeed-metrics\"");
    // The checking queue drains in about capacity bcrypt checks.
    if (status == http::status::service_unavailable) response_.set(http::field::retry_after, "1");
    response_.set(http::field::content_type, "text/plain; charset=utf-8");
    response_.body() = std::string(http::obsolete_reason(status)) + "\n";
    response_.prepare_payload();
    if (request.method() == http::verb::head) response_.body().clear();
    write_response();
  }

  // An admitted request: answered at once, or queued for the next render.
  void route() {
    const http::request<http::string_body>& request = parser_->get();
    if (auto answer = server_.respond_at_once(request)) {
      response_ = std::move(*answer);
      return write_response();
    }
    // A scrape: answered in on_rendered once a render thread has rendered.
    scrape_version_ = request.version();
    scrape_keep_alive_ = request.keep_alive();
    scrape_head_ = request.method() == http::verb::head;
    const auto accept = request[http::field::accept_encoding];
    scrape_gzip_ = accepts_gzip(std::string_view(accept.data(), accept.size()));
    server_.request_scrape(shared_from_this(), scrape_gzip_);
  }

  void send_error(http::status status) {
    response_ = {};
    response_.result(status);
    response_.version(11);
    response_.set(http::field::content_type, "text/plain; charset=utf-8");
    response_.set(http::field::connection, "close");
    response_.body() = std::string(http::obsolete_reason(status)) + "\n";
    response_.keep_alive(false);
    response_.prepare_payload();
    write_response();
  }

  void write_response() {
    for (const auto& [name, value] : security_->headers) response_.set(name, value);
    tcp_layer().expires_after(server_.options.write_timeout);
    std::visit(
        [this](auto& stream) {
          http::async_write(stream, response_,
                            beast::bind_front_handler(&Session::on_write, shared_from_this()));
        },
        stream_);
  }

  void on_write(beast::error_code ec, std::size_t) {
    if (ec == beast::error::timeout) server_.timeouts.fetch_add(1, std::memory_order_relaxed);
    if (ec) return;
    if (!response_.keep_alive()) return linger();
    response_ = {};  // a kept-alive connection holds no response between requests
    wait_for_request();
  }

  // Closing after a response while the client may still be sending (an
  // oversized or pipelined request): stop sending, then read and discard
  // until the client closes, for at most linger_timeout and
  // kMaxLingerBytes, as nginx's lingering close does. Closing at once would
  // make the kernel answer the unread bytes with a reset, which can destroy
  // the response before the client reads it.
  // Over TLS the bytes discarded are the encrypted ones, read from under
  // the TLS layer.
  void linger() {
    response_ = {};
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
    if (!set_waiting(true)) return;  // evictable while it lingers
    buffer_.consume(buffer_.size());
    tcp_layer().expires_after(server_.options.linger_timeout);
    discard(0);
  }

  void discard(std::size_t discarded) {
    tcp_layer().async_read_some(
        buffer_.prepare(std::min<std::size_t>(4096, buffer_.max_size())),
        [self = shared_from_this(), discarded](beast::error_code ec, std::size_t bytes) {
          self->buffer_.consume(self->buffer_.size());
          if (ec || discarded + bytes > kMaxLingerBytes) return self->tcp_layer().close();
          self->discard(discarded + bytes);
        });
  }

  void close() {
    beast::error_code ignored;
    tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
    tcp_layer().close();
  }

  std::variant<PlainStream, TlsStream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  PrometheusEndpoint::Impl& server_;
  std::shared_ptr<const EndpointSecurity> security_;  // the web configuration in force
  // sessions_mutex:
  std::list<std::weak_ptr<Session>>::iterator entry_;
  bool registered_ = false;
  bool waiting_ = false;  // no complete request received since waiting_since_
  bool evicted_ = false;
  bool hung_up_ = false;  // the client closed while its credentials were checked
  bool refused_ = false;  // a request of it was answered 401, 429 or 503
  Clock::time_point waiting_since_;
  // The credential check in progress (read on the session's strand only).
  bool checking_ = false;
  bool watching_ = false;  // a hang-up watch is pending
  std::uint64_t watch_generation_ = 0;
  // The scrape waiting for a render (read on the session's strand only).
  unsigned scrape_version_ = 11;
  bool scrape_keep_alive_ = true;
  bool scrape_head_ = false;
  bool scrape_gzip_ = false;
};

}  // namespace

std::optional<http::response<http::string_body>> PrometheusEndpoint::Impl::respond_at_once(
    const http::request<http::string_body>& request) {
  http::response<http::string_body> response;
  response.version(request.version());
  response.keep_alive(request.keep_alive());
  std::string_view target(request.target().data(), request.target().size());
  target = target.substr(0, target.find('?'));
  const bool head = request.method() == http::verb::head;
  if (target != "/metrics") {
    response.result(http::status::not_found);
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "not found: the exposition is at /metrics\n";
    response.prepare_payload();
    if (head) response.body().clear();  // the length stays: what GET would send
    return response;
  }
  if (request.method() != http::verb::get && !head) {
    response.result(http::status::method_not_allowed);
    response.set(http::field::allow, "GET, HEAD");
    response.set(http::field::content_type, "text/plain; charset=utf-8");
    response.body() = "method not allowed\n";
    response.prepare_payload();
    return response;
  }
  return std::nullopt;
}

void PrometheusEndpoint::Impl::request_scrape(std::shared_ptr<Session> session, bool gzip) {
  {
    std::lock_guard lock(render_mutex);
    scrape_waiters.push_back(ScrapeWaiter{std::move(session), gzip});
  }
  render_cv.notify_one();
}

void PrometheusEndpoint::Impl::render_loop() {
  for (;;) {
    std::deque<ScrapeWaiter> batch;
    {
      std::unique_lock lock(render_mutex);
      // Not wait(): GCC 12 binds it to GLIBCXX_3.4.30, beyond the build
      // baseline (plugins/symbol-versions.txt).
      render_cv.wait_until(lock, std::chrono::steady_clock::time_point::max(),
                           [this] { return render_stop || !scrape_waiters.empty(); });
      if (render_stop) break;
      batch.swap(scrape_waiters);
    }
    // Rendered after every request of the batch arrived: none is answered
    // with figures older than its request.
    auto rendered = std::make_shared<Rendered>();
    try {
      rendered->body = handler();
      const bool gzip = std::any_of(batch.begin(), batch.end(),
                                    [](const ScrapeWaiter& waiter) { return waiter.gzip; });
      if (gzip) rendered->gzipped = kit::gzip_compress(rendered->body, options.gzip_level);
    } catch (const std::exception& error) {
      rendered->failed = true;
      rendered->body = error.what();
    } catch (...) {
      // Answered as a failed scrape (500 with this text) to every waiting request.
      rendered->failed = true;
      rendered->body = "unknown error";
    }
    std::shared_ptr<const Rendered> shared = std::move(rendered);
    for (ScrapeWaiter& waiter : batch) {
      auto executor = waiter.session->executor();
      asio::post(executor,
                 [session = std::move(waiter.session), shared] { session->on_rendered(*shared); });
    }
  }
  thread_finished();
}

void PrometheusEndpoint::Impl::log_handler_exception() noexcept {
  try {
    std::string what = "an unknown exception";
    try {
      throw;
    } catch (const std::exception& error) {
      what = error.what();
    } catch (...) {
      // Not a std::exception: "an unknown exception" says all there is.
    }
    std::lock_guard lock(handler_log_mutex);
    handler_log.message("a connection handler threw (" + what + "); still serving",
                        FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the endpoint keeps serving, which is what matters.
  }
}

void PrometheusEndpoint::Impl::log_unauthorized() noexcept {
  try {
    std::lock_guard lock(handler_log_mutex);
    handler_log.report("requests refused (401): credentials missing or wrong", 1,
                       FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the refusal is still counted.
  }
}

void PrometheusEndpoint::Impl::log_checks_refused() noexcept {
  try {
    std::lock_guard lock(handler_log_mutex);
    handler_log.report("requests refused (503): too many credential checks waiting", 1,
                       FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the refusal is still counted.
  }
}

void PrometheusEndpoint::Impl::thread_finished() {
  std::lock_guard lock(done_mutex);
  ++finished;
  done_cv.notify_all();
}

std::shared_ptr<Session> PrometheusEndpoint::Impl::choose_eviction_locked(
    std::vector<std::shared_ptr<Session>>& seen) {
  // Connections that had a request refused go first: a client flooding
  // wrong passwords and reconnecting when evicted then evicts its own kind
  // before a scraper's connection that has just opened.
  std::shared_ptr<Session> oldest_refused;
  std::shared_ptr<Session> oldest_other;
  seen.reserve(sessions.size());
  for (const std::weak_ptr<Session>& entry : sessions) {
    std::shared_ptr<Session> session = entry.lock();
    if (!session) continue;
    seen.push_back(session);
    if (!session->waiting_locked()) continue;
    std::shared_ptr<Session>& oldest = session->refused_locked() ? oldest_refused : oldest_other;
    if (!oldest || session->waiting_since_locked() < oldest->waiting_since_locked())
      oldest = session;
  }
  std::shared_ptr<Session> oldest = oldest_refused ? oldest_refused : oldest_other;
  if (oldest) {
    oldest->mark_evicted_locked();
    --admitted;
  }
  return oldest;
}

void PrometheusEndpoint::Impl::admit(tcp::socket socket) {
  // No Nagle delay: a TLS response goes out as several records, and the
  // last would wait for the client's delayed ACK (40 ms) behind the first.
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  std::vector<std::shared_ptr<Session>> seen;  // released after the mutex
  std::shared_ptr<Session> victim;
  std::shared_ptr<Session> session;
  // The configuration in force when the connection began (a pointer copy).
  std::shared_ptr<const EndpointSecurity> in_force = security->current();
  {
    std::lock_guard lock(sessions_mutex);
    if (admitted >= options.max_connections) {
      victim = choose_eviction_locked(seen);
      if (!victim) {
        rejected.fetch_add(1, std::memory_order_relaxed);
        beast::error_code ignored;
        socket.close(ignored);
        return;
      }
    }
    open.fetch_add(1, std::memory_order_relaxed);
    session = std::make_shared<Session>(std::move(socket), *this, std::move(in_force));
    session->register_locked(sessions.insert(sessions.end(), session));
    ++admitted;
  }
  accepted.fetch_add(1, std::memory_order_relaxed);
  if (victim) {
    evicted.fetch_add(1, std::memory_order_relaxed);
    asio::post(victim->executor(), [victim] { victim->evict(); });
  }
  session->start();
}

void PrometheusEndpoint::Impl::do_accept() {
  acceptor->async_accept(asio::make_strand(*io), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) admit(std::move(socket));
    do_accept();
  });
}

PrometheusEndpoint::PrometheusEndpoint(PrometheusEndpointOptions options, ScrapeHandler handler)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.options = std::move(options);
  impl.handler = std::move(handler);
  if (impl.options.threads == 0) impl.options.threads = 1;
  // Throws StartupError naming the web configuration file and its key.
  impl.security.emplace(impl.options.web_config_file, impl.options.web_config_check_interval);
  if (!impl.options.web_config_file.empty())
    impl.credential_checks.emplace(impl.options.max_pending_credential_checks);
  const std::string& host = impl.options.host;
  const unsigned short port = impl.options.port;
  const std::string where = host + ":" + std::to_string(port);

  beast::error_code ec;
  tcp::endpoint endpoint;
  const auto address = asio::ip::make_address(host, ec);
  if (!ec) {
    endpoint = tcp::endpoint(address, port);
  } else {
    tcp::resolver resolver(*impl.io);
    const auto results = resolver.resolve(host, std::to_string(port), ec);
    if (ec || results.empty()) {
      throw StartupError({"prometheus", "", "--metrics-host"},
                         "cannot resolve metrics host '" + host + "'" +
                             (ec ? ": " + ec.message() : std::string()));
    }
    endpoint = results.begin()->endpoint();
  }
  auto fail = [&](const char* step) {
    throw StartupError({"prometheus", "", "--metrics-port"},
                       std::string("cannot ") + step + " on " + where + " (port " +
                           std::to_string(port) + "): " + ec.message());
  };
  impl.acceptor->open(endpoint.protocol(), ec);
  if (ec) fail("open a socket");
  impl.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  impl.acceptor->bind(endpoint, ec);
  if (ec) fail("listen");
  impl.acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) fail("listen");
  const tcp::endpoint local = impl.acceptor->local_endpoint(ec);
  impl.bound_port = local.port();
  impl.bound_host = local.address().to_string();

  impl.work.emplace(impl.io->get_executor());
  impl.do_accept();
  for (unsigned i = 0; i < impl.options.threads; ++i) {
    impl.threads.emplace_back([&impl] {
      for (;;) {
        try {
          impl.io->run();
          break;
        } catch (...) {
          impl.log_handler_exception();  // and keep serving
        }
      }
      impl.thread_finished();
    });
  }
  for (unsigned i = 0; i < impl.options.threads; ++i) {
    impl.threads.emplace_back([&impl] { impl.render_loop(); });
  }
}

PrometheusEndpoint::~PrometheusEndpoint() {
  stop(std::chrono::seconds(5));
  for (std::thread& thread : impl_->threads) {
    if (thread.joinable()) thread.join();
  }
  // Scrapes still waiting hold their connections: close them while the
  // io_context they belong to still exists.
  impl_->scrape_waiters.clear();
}

unsigned short PrometheusEndpoint::port() const noexcept { return impl_->bound_port; }

std::string PrometheusEndpoint::address() const {
  return impl_->bound_host + ":" + std::to_string(impl_->bound_port);
}

std::string PrometheusEndpoint::url() const {
  const bool tls = impl_->security && impl_->security->current()->tls != nullptr;
  return (tls ? "https://" : "http://") + address() + "/metrics";
}

std::string PrometheusEndpoint::security_summary() const {
  return impl_->security ? impl_->security->current()->summary : std::string();
}

EndpointCounters PrometheusEndpoint::counters() const noexcept {
  const Impl& impl = *impl_;
  EndpointCounters counters{impl.accepted.load(), impl.rejected.load(),  impl.evicted.load(),
                            impl.open.load(),     impl.requests.load(),  impl.idle_timeouts.load(),
                            impl.timeouts.load(), impl.oversized.load(), impl.bad_requests.load()};
  counters.tls_handshake_failures = impl.tls_handshake_failures.load();
  counters.unauthorized = impl.unauthorized.load();
  counters.rate_limited = impl.rate_limited.load();
  counters.credential_checks_refused = impl.checks_refused.load();
  if (impl.credential_checks)
    counters.credential_checks_skipped = impl.credential_checks->skipped_count();
  if (impl.security) {
    counters.web_config_reloads = impl.security->reloads();
    counters.web_config_reload_failures = impl.security->failed_reloads();
  }
  return counters;
}

bool PrometheusEndpoint::stop(std::chrono::milliseconds timeout) noexcept {
  Impl& impl = *impl_;
  {
    std::lock_guard lock(impl.done_mutex);
    if (impl.stopped) return impl.finished == impl.threads.size();
    impl.stopped = true;
  }
  {
    std::lock_guard lock(impl.render_mutex);
    impl.render_stop = true;
  }
  impl.render_cv.notify_all();
  // Checks of passwords still queued are dropped with their connections.
  if (impl.credential_checks) impl.credential_checks->stop();
  impl.work.reset();
  impl.io->stop();
  std::unique_lock lock(impl.done_mutex);
  const bool done = impl.done_cv.wait_for(lock, timeout,
                                          [&impl] { return impl.finished == impl.threads.size(); });
  lock.unlock();
  if (!done) return false;
  for (std::thread& thread : impl.threads) {
    if (thread.joinable()) thread.join();
  }
  // No server thread runs any more: close the listener, then destroy the
  // pending handlers, which owns and so closes every open connection.
  // The queue itself stays (empty) until the destructor: counters() reads it.
  if (impl.credential_checks) impl.credential_checks->join();
  impl.scrape_waiters.clear();
  impl.acceptor.reset();
  impl.io.reset();
  return true;
}

}  // namespace tokenspeed::metrics
