// prometheus_endpoint_impl.hpp — the state the endpoint's files share: the server
// (PrometheusEndpoint::Impl: options, counters, the sessions counted at the
// connection limit, the render queue, the threads) and one render's result.
// Internal to host/prometheus/: only the endpoint's own files include it.
// Tested in test/unit/prometheus/server/prometheus_endpoint_test.cpp and
// test/unit/prometheus/server/web_security_test.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
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
#include "core/fault_log.hpp"
#include "core/thread_safety.hpp"
#include "prometheus/scrape/protobuf_exposition.hpp"

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

// One render of the exposition, shared by every request that waited for it.
struct RenderedScrape {
  bool failed = false;
  std::string body;              // the text exposition, or the error's text when failed
  std::string gzipped;           // the body gzip-encoded, when a waiting request accepts gzip
  std::string protobuf;          // the protobuf exposition, when a waiting request asked for it
  std::string protobuf_gzipped;  // and gzip-encoded, when one of those accepts gzip
};

// A request for /metrics waiting for the next render.
struct ScrapeWaiter {
  std::shared_ptr<EndpointSession> session;
  bool gzip = false;
  bool protobuf = false;  // asked for the protobuf exposition (and the endpoint has families)
};

struct PrometheusEndpoint::Impl {
  PrometheusEndpointOptions options;
  ScrapeHandler handler;     // the text, when the endpoint was made with one
  FamiliesHandler families;  // else the families, rendered in the format asked
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

  // The admitted sessions, for eviction at the limit. sessions_mutex also
  // guards each session's waiting fields, in comments only: the analysis
  // cannot tell that a session's server_ is this one.
  Mutex sessions_mutex;
  std::list<std::weak_ptr<EndpointSession>> sessions TSM_GUARDED_BY(sessions_mutex);
  // Sessions in the list not chosen for eviction.
  std::size_t admitted TSM_GUARDED_BY(sessions_mutex) = 0;

  // Scrapes waiting for a render. A render thread takes every waiting
  // request at once and answers them all from one render, so a burst of
  // scrapes costs about one render per render thread, not one per request.
  Mutex render_mutex;
  CondVar render_cv;
  std::deque<ScrapeWaiter> scrape_waiters TSM_GUARDED_BY(render_mutex);
  bool render_stop TSM_GUARDED_BY(render_mutex) = false;

  Mutex done_mutex;
  CondVar done_cv;
  // Server and render threads that returned.
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

  void do_accept();
  void admit(tcp::socket socket);
  // Under sessions_mutex: chooses the session that has waited longest
  // without a complete request (or for its credential check), among those
  // that had a request refused first, then among those that never had one
  // authorized, then among the rest, and marks it evicted; null when none
  // waits.
  // Every session it looks at is kept in `seen`, so that none is destroyed
  // (which takes sessions_mutex) before the caller lets the mutex go.
  std::shared_ptr<EndpointSession> choose_eviction_locked(
      std::vector<std::shared_ptr<EndpointSession>>& seen) TSM_REQUIRES(sessions_mutex);
  // The answer to a request other than a scrape (404, 405); nullopt for a
  // GET or HEAD of /metrics, which waits for a render (request_scrape).
  std::optional<http::response<http::string_body>> respond_at_once(
      const http::request<http::string_body>& request);
  // Queues session for the next render; it is answered on its own strand.
  // The format is the one asked for; text when the endpoint has no families.
  void request_scrape(std::shared_ptr<EndpointSession> session, bool gzip, ExpositionFormat format);
  // Renders what the batch's requests asked for (render threads).
  void render(const std::deque<ScrapeWaiter>& batch, RenderedScrape& rendered) const;
  void render_loop();
  void thread_finished();
};

}  // namespace tokenspeed::metrics
