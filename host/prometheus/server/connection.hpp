// connection.hpp — one connection of the /metrics endpoint (EndpointSession)
// and what its member functions are split into: the connection itself
// (connection.cpp: TLS handshake, reads and writes with deadlines,
// keep-alive, lingering close, admission and eviction at the connection
// limit), who may be answered (access_control.cpp) and the answer to
// a scrape (scrape_answer.cpp). Internal to host/prometheus/server/.
// Tested in test/unit/prometheus/server/prometheus_endpoint_test.cpp and
// test/unit/prometheus/server/web_security_test.cpp.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "prometheus/server/web_security.hpp"
#include "prometheus/server/prometheus_endpoint_impl.hpp"
#include "prometheus/server/request_rate_limit.hpp"

namespace tokenspeed::metrics {

namespace ssl = asio::ssl;

using Clock = std::chrono::steady_clock;

// What a closing connection reads and discards at most (see linger()).
constexpr std::size_t kMaxLingerBytes = std::size_t{1} << 20;

// One connection. Threading: its handlers run on its own strand; its
// standing at the connection limit is kept by the session table.
// A connection's stream: plain TCP, or TLS over it when the web
// configuration in force at accept time asks for TLS.
using PlainStream = beast::tcp_stream;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;

// Decodes the credentials of an "Authorization: Basic ..." header value;
// false when it is not one (access_control.cpp).
bool decode_basic_credentials(std::string_view value, std::string& user, std::string& password);

class EndpointSession : public std::enable_shared_from_this<EndpointSession> {
 public:
  using Ticket = SessionTable<EndpointSession>::Ticket;
  // Admitted under ticket, which it leaves when destroyed.
  EndpointSession(tcp::socket socket, PrometheusEndpoint::Impl& server,
                  std::shared_ptr<const EndpointSecurity> security, Ticket ticket);
  ~EndpointSession();

  void start();
  void evict();

  beast::tcp_stream::executor_type executor() { return tcp_layer().get_executor(); }

  void on_rendered(const RenderedScrape& rendered);

 private:
  // The connection (connection.cpp).
  static std::variant<PlainStream, TlsStream> plain_or_tls(tcp::socket socket,
                                                           const EndpointSecurity& security);
  beast::tcp_stream& tcp_layer();
  void on_handshake(beast::error_code ec);
  static bool is_plain_http_request(const beast::error_code& ec) noexcept;
  void answer_plain_http();
  bool evicted();
  bool set_waiting(bool waiting);
  void wait_for_request();
  void on_first_bytes(beast::error_code ec, std::size_t bytes);
  void read_request();
  void on_read(beast::error_code ec, std::size_t);
  void send_error(http::status status);
  void write_response();
  void on_write(beast::error_code ec, std::size_t);
  void linger();
  void discard(std::size_t discarded);
  void close();

  // Who may be answered (access_control.cpp).
  bool admit(RequestRateLimit::Bucket bucket);
  class Check;
  void check_credentials(std::string user, std::string password);
  bool check_wanted();
  void on_checked(bool verified);
  void watch_for_hangup();
  bool hung_up();
  void unauthorized();
  void send_refusal(http::status status);

  // The answer to an admitted request (scrape_answer.cpp).
  void route();

  std::variant<PlainStream, TlsStream> stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  PrometheusEndpoint::Impl& server_;
  std::shared_ptr<const EndpointSecurity> security_;  // the web configuration in force
  const Ticket ticket_;  // its place in server_.sessions: waiting, refused, evicted
  // The client closed while its credentials were checked (set on the
  // strand, read by the checking thread).
  std::atomic<bool> hung_up_{false};
  // The credential check in progress (read on the session's strand only).
  bool checking_ = false;
  bool watching_ = false;  // a hang-up watch is pending
  std::uint64_t watch_generation_ = 0;
  // The scrape waiting for a render (read on the session's strand only).
  unsigned scrape_version_ = 11;
  bool scrape_keep_alive_ = true;
  bool scrape_head_ = false;
  bool scrape_gzip_ = false;
  bool scrape_protobuf_ = false;  // answered with the protobuf exposition
};

}  // namespace tokenspeed::metrics
