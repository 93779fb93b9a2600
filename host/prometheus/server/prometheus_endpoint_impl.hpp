// prometheus_endpoint_impl.hpp — the state the endpoint's files share
// (PrometheusEndpoint::Impl): options, counters, the web configuration in
// force, the session table, the renderer, the I/O threads.
// Internal to host/prometheus/server/: only the endpoint's own files include it.
// Tested in test/unit/prometheus/server/prometheus_endpoint_test.cpp and
// test/unit/prometheus/server/web_security_test.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include "prometheus/server/credential_check_queue.hpp"
#include "prometheus/server/web_security.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"
#include "prometheus/server/request_rate_limit.hpp"
#include "prometheus/server/scrape_renderer.hpp"
#include "prometheus/server/session_table.hpp"
#include "core/fault_log.hpp"
#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// One connection (connection.hpp).
class EndpointSession;

// A header value without its surrounding blanks (Accept-Encoding, Authorization).
inline std::string_view trim_http_whitespace(std::string_view text) noexcept {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

struct PrometheusEndpoint::Impl {
  PrometheusEndpointOptions options;
  std::atomic<std::uint64_t> accepted{0}, rejected{0}, evicted{0}, requests{0}, idle_timeouts{0},
      timeouts{0}, oversized{0}, bad_requests{0}, tls_handshake_failures{0}, unauthorized{0},
      rate_limited{0}, checks_refused{0};
  std::atomic<std::size_t> open{0};  // sessions alive (evicted ones until they are gone)

  // A handler of the I/O threads that threw (the endpoint keeps serving):
  // at most one line per 10 s, with the count since the last one.
  Mutex handler_log_mutex;
  FaultLog handler_log TSM_GUARDED_BY(handler_log_mutex){
      "Prometheus endpoint", std::chrono::seconds(10), {}};
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

  // The sessions counted at the connection limit, and which one goes.
  std::optional<SessionTable<EndpointSession>> sessions;

  Mutex done_mutex;
  CondVar done_cv;
  // I/O threads that returned.
  unsigned finished TSM_GUARDED_BY(done_mutex) = 0;
  bool stopped TSM_GUARDED_BY(done_mutex) = false;
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
  // Renders the scrapes on threads of its own. Declared after io: the
  // scrapes still waiting hold their sessions.
  std::optional<ScrapeRenderer> renderer;

  void do_accept();
  void admit(tcp::socket socket);
  // The answer to a request other than a scrape (404, 405); nullopt for a
  // GET or HEAD of /metrics, which waits for a render (renderer).
  std::optional<http::response<http::string_body>> respond_at_once(
      const http::request<http::string_body>& request);
  void thread_finished();
};

}  // namespace tokenspeed::metrics
