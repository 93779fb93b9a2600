// connection.cpp — one connection of the /metrics endpoint: the TLS
// handshake, reads and writes under their deadlines and the size bound,
// keep-alive and pipelining, the lingering close; and the acceptor's side,
// which admits a connection or evicts the longest-waiting one at the limit.
// Never renders and never checks a password itself: route() and the access
// checks of on_read() hand over to the files that do.
#include "prometheus/server/connection.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include <boost/asio/strand.hpp>

#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

EndpointSession::EndpointSession(tcp::socket socket, PrometheusEndpoint::Impl& server,
                                 std::shared_ptr<const EndpointSecurity> security, Ticket ticket)
    : stream_(plain_or_tls(std::move(socket), *security)),
      buffer_(server.options.max_request_bytes + 1024),
      server_(server),
      security_(std::move(security)),
      ticket_(ticket) {}

EndpointSession::~EndpointSession() {
  server_.sessions->leave(ticket_);
  server_.open.fetch_sub(1, std::memory_order_relaxed);
}

void EndpointSession::start() {
  auto* tls = std::get_if<TlsStream>(&stream_);
  if (tls == nullptr) return wait_for_request();
  // A client that never finishes its handshake is a slow client: the same
  // deadline as a request's, and evictable meanwhile.
  tcp_layer().expires_after(server_.options.read_timeout);
  tls->async_handshake(
      ssl::stream_base::server,
      beast::bind_front_handler(&EndpointSession::on_handshake, shared_from_this()));
}

// Posted to the session's strand by the acceptor: closes the connection,
// which ends its pending read.
void EndpointSession::evict() {
  beast::error_code ignored;
  tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
  tcp_layer().close();
}

std::variant<PlainStream, TlsStream> EndpointSession::plain_or_tls(
    tcp::socket socket, const EndpointSecurity& security) {
  if (security.tls == nullptr) return PlainStream(std::move(socket));
  return std::variant<PlainStream, TlsStream>(std::in_place_type<TlsStream>, std::move(socket),
                                              *security.tls);
}

// The TCP stream under TLS, or the stream itself.
beast::tcp_stream& EndpointSession::tcp_layer() {
  return std::visit(
      [](auto& stream) -> beast::tcp_stream& { return beast::get_lowest_layer(stream); }, stream_);
}

void EndpointSession::on_handshake(beast::error_code ec) {
  if (ec == beast::error::timeout) {
    server_.timeouts.fetch_add(1, std::memory_order_relaxed);
    return;  // the stream is already closed by the timeout
  }
  if (!ec && security_->client_allowed_sans) {
    const X509* peer = SSL_get0_peer_certificate(std::get<TlsStream>(stream_).native_handle());
    if (!certificate_has_allowed_san(peer, *security_->client_allowed_sans))
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
bool EndpointSession::is_plain_http_request(const beast::error_code& ec) noexcept {
  if (ec.category() != asio::error::get_ssl_category()) return false;
  const auto code = static_cast<unsigned long>(static_cast<unsigned int>(ec.value()));
  return ERR_GET_LIB(code) == ERR_LIB_SSL && ERR_GET_REASON(code) == SSL_R_HTTP_REQUEST;
}

// What Go's net/http answers a plain HTTP request on its TLS port (then
// it closes): written on the TCP layer under the TLS one, which never
// began, and the connection closed as after an error (linger).
void EndpointSession::answer_plain_http() {
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

bool EndpointSession::evicted() { return server_.sessions->evicted(ticket_); }

// Sets whether the connection is without a complete request; false when
// it was chosen for eviction meanwhile (the caller then stops).
bool EndpointSession::set_waiting(bool waiting) {
  return server_.sessions->set_waiting(ticket_, waiting, Clock::now());
}

// Between requests: wait up to idle_timeout for the first byte of the
// next one, unless a pipelined request is already buffered.
void EndpointSession::wait_for_request() {
  if (!set_waiting(true)) return;
  if (buffer_.size() > 0) return read_request();
  tcp_layer().expires_after(server_.options.idle_timeout);
  std::visit(
      [this](auto& stream) {
        stream.async_read_some(
            buffer_.prepare(std::min<std::size_t>(4096, buffer_.max_size())),
            beast::bind_front_handler(&EndpointSession::on_first_bytes, shared_from_this()));
      },
      stream_);
}

void EndpointSession::on_first_bytes(beast::error_code ec, std::size_t bytes) {
  if (ec == beast::error::timeout) {
    server_.idle_timeouts.fetch_add(1, std::memory_order_relaxed);
    return;  // the stream is already closed by the timeout
  }
  if (ec == asio::error::eof) return close();
  if (ec) return;
  buffer_.commit(bytes);
  read_request();
}

void EndpointSession::read_request() {
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_request_bytes));
  parser_->body_limit(server_.options.max_request_bytes);
  tcp_layer().expires_after(server_.options.read_timeout);
  std::visit(
      [this](auto& stream) {
        http::async_read(stream, buffer_, *parser_,
                         beast::bind_front_handler(&EndpointSession::on_read, shared_from_this()));
      },
      stream_);
}

void EndpointSession::on_read(beast::error_code ec, std::size_t) {
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

void EndpointSession::send_error(http::status status) {
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

void EndpointSession::write_response() {
  for (const auto& [name, value] : security_->headers) response_.set(name, value);
  tcp_layer().expires_after(server_.options.write_timeout);
  std::visit(
      [this](auto& stream) {
        http::async_write(
            stream, response_,
            beast::bind_front_handler(&EndpointSession::on_write, shared_from_this()));
      },
      stream_);
}

void EndpointSession::on_write(beast::error_code ec, std::size_t) {
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
void EndpointSession::linger() {
  response_ = {};
  beast::error_code ignored;
  tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (!set_waiting(true)) return;  // evictable while it lingers
  buffer_.consume(buffer_.size());
  tcp_layer().expires_after(server_.options.linger_timeout);
  discard(0);
}

void EndpointSession::discard(std::size_t discarded) {
  tcp_layer().async_read_some(
      buffer_.prepare(std::min<std::size_t>(4096, buffer_.max_size())),
      [self = shared_from_this(), discarded](beast::error_code ec, std::size_t bytes) {
        self->buffer_.consume(self->buffer_.size());
        if (ec || discarded + bytes > kMaxLingerBytes) return self->tcp_layer().close();
        self->discard(discarded + bytes);
      });
}

void EndpointSession::close() {
  beast::error_code ignored;
  tcp_layer().socket().shutdown(tcp::socket::shutdown_send, ignored);
  tcp_layer().close();
}

// A new connection, admitted at the limit when a waiting one can go to make
// room (session_table.hpp says which), else closed at once.
void PrometheusEndpoint::Impl::admit(tcp::socket socket) {
  // No Nagle delay: a TLS response goes out as several records, and the
  // last would wait for the client's delayed ACK (40 ms) behind the first.
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);
  auto admission = sessions->admit(Clock::now());
  if (!admission.admitted) {
    rejected.fetch_add(1, std::memory_order_relaxed);
    socket.close(ignored);
    return;
  }
  // The configuration in force when the connection began (a pointer copy).
  std::shared_ptr<const EndpointSecurity> in_force = security->current();
  open.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<EndpointSession> session;
  try {
    session = std::make_shared<EndpointSession>(std::move(socket), *this, std::move(in_force),
                                                admission.ticket);
  } catch (...) {
    sessions->leave(admission.ticket);  // the session's destructor did not run
    open.fetch_sub(1, std::memory_order_relaxed);
    throw;
  }
  sessions->attach(admission.ticket, session);
  accepted.fetch_add(1, std::memory_order_relaxed);
  if (std::shared_ptr<EndpointSession> victim = std::move(admission.evicted)) {
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

}  // namespace tokenspeed::metrics
