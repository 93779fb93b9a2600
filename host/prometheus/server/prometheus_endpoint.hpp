// prometheus_endpoint.hpp — the /metrics HTTP/1.1 server (Boost.Beast) the
// launcher runs on its own threads. It only serves what its scrape handler
// renders; it never touches a store or a producer file itself.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/endpoint_defaults.hpp"
#include "prometheus/server/scrape_renderer.hpp"

namespace tokenspeed::metrics {

// The limits that keep the endpoint serving well-behaved scrapers while
// hostile or broken clients connect (docs/reliability.md, "The endpoint
// under hostile clients", explains each default).
struct PrometheusEndpointOptions {
  std::string host{kDefaultMetricsHost};      // IP address or resolvable name
  unsigned short port = kDefaultMetricsPort;  // 0: pick a free port (see port())
  // Server threads (at least 1), and as many render threads: connections
  // are accepted, read, written and closed on the first, scrapes rendered on
  // the second, so a slow render never delays accepting or refusing one.
  unsigned threads = 2;
  // A connection with no request in progress (just accepted, or kept alive
  // after a response) is closed when no byte of a request arrives within
  // this time. Longer than Prometheus's default one-minute scrape interval,
  // so a scraper's kept-alive connection is reused (nginx keepalive: 75 s).
  std::chrono::milliseconds idle_timeout{75'000};
  // Time allowed to receive one whole request from its first byte: a client
  // that dribbles its headers (slowloris) is disconnected after it.
  std::chrono::milliseconds read_timeout{10'000};
  // Time allowed to send one whole response: a client that reads slowly is
  // disconnected after it, which bounds what a connection holds.
  std::chrono::milliseconds write_timeout{30'000};
  // After the last response of a connection the server closes (an error,
  // or Connection: close), what the client still sends is read and
  // discarded for at most this long, so that the response reaches it
  // (nginx's lingering_timeout: 5 s).
  std::chrono::milliseconds linger_timeout{5'000};
  std::size_t max_request_bytes = 16 * 1024;  // request line + headers + body
  // Connections open at once. At the limit a new connection takes the place
  // of the one that has waited longest without a complete request (idle,
  // incomplete, or waiting for its credential check: counted as evicted),
  // looking first among those that had a request refused (401, 429, 503);
  // when every connection is busy with a request, the new one is closed at
  // once (counted as rejected).
  std::size_t max_connections = 64;
  int gzip_level = 1;  // zlib level 1-9
  // The web configuration file (--metrics-web-config: TLS, basic-auth users,
  // response headers, rate limit); "" serves plain HTTP to anyone. Its
  // files are looked at again once per web_config_check_interval by a
  // thread of their own, and reloaded when one changed and holds still
  // (prometheus/server/web_security.hpp).
  std::string web_config_file;
  std::chrono::milliseconds web_config_check_interval{1'000};
  // Basic-auth checks (bcrypt) waiting or running at once, on the one
  // checking thread. A request whose credentials need a check beyond it is
  // answered 503 with Retry-After at once (counted). A connection waiting
  // for its check counts as waiting for eviction at max_connections, and a
  // check whose connection was evicted or closed is skipped.
  std::size_t max_pending_credential_checks = 16;
};

// The scrape and families handlers are ScrapeRenderer's (scrape_renderer.hpp).

// What the endpoint did, since it started (connections_open: now).
struct EndpointFigures {
  std::uint64_t connections_accepted = 0;
  std::uint64_t connections_rejected = 0;  // at max_connections, none could be evicted
  std::uint64_t connections_evicted = 0;   // closed at the limit to admit a new one
  std::uint64_t connections_open = 0;
  std::uint64_t requests = 0;
  std::uint64_t idle_timeouts = 0;       // no request began within idle_timeout
  std::uint64_t timeouts = 0;            // a request or response outlasted read_ or write_timeout
  std::uint64_t oversized_requests = 0;  // answered 413 or 431
  std::uint64_t bad_requests = 0;        // malformed, answered 400
  std::uint64_t tls_handshake_failures = 0;      // handshake refused or broken off (not timed out)
  std::uint64_t unauthorized = 0;                // answered 401: credentials missing or wrong
  std::uint64_t rate_limited = 0;                // answered 429 under the web config's rate_limit
  std::uint64_t credential_checks_refused = 0;   // answered 503: the checking queue was full
  std::uint64_t credential_checks_skipped = 0;   // their connection evicted or gone before bcrypt
  std::uint64_t web_config_reloads = 0;          // web configuration reloaded after a change
  std::uint64_t web_config_reload_failures = 0;  // a change that did not load (old one kept)
  // A valid change refused because it would lower security (old one kept).
  std::uint64_t web_config_reloads_refused_weaker = 0;
};

// True when an Accept-Encoding header value allows gzip (q > 0 for gzip, or
// for * when gzip is not listed).
bool accepts_gzip(std::string_view accept_encoding) noexcept;

// GET /metrics and HEAD /metrics answer 200 with the exposition
// (Content-Type text/plain; version=0.0.4), gzip-encoded when the client
// accepts it; other paths 404; other methods on /metrics 405 with
// "Allow: GET, HEAD"; a request over max_request_bytes 413 (431 for headers),
// a malformed one (an HTTP version other than 1.0 and 1.1 included) 400, then
// the connection closes. Connections are kept
// alive as HTTP/1.1 asks; pipelined requests are answered in order.
// With a web configuration: TLS on every connection (a handshake counts
// against read_timeout, like a slow request; plain HTTP sent to it is
// answered Go's "HTTP/1.0 400 Bad Request" and closed), a request over the
// rate limit 429 (authenticated requests and the others in buckets of their
// own), one without valid basic-auth credentials 401 with
// "WWW-Authenticate: Basic" (checked off the I/O threads, one bcrypt at a
// time, at most max_pending_credential_checks waiting, 503 beyond; failures
// logged at most once per 10 s with their count), and the configured headers
// on every response.
//
// Threading: the constructor binds and starts the server threads; stop and
// the destructor may be called from any one thread, not from a handler.
class PrometheusEndpoint {
 public:
  // Throws StartupError naming --metrics-port (for example when the port is
  // in use) or --metrics-host (when the address cannot be resolved or bound),
  // or the web configuration file and its key.
  PrometheusEndpoint(PrometheusEndpointOptions options, ScrapeHandler handler);
  PrometheusEndpoint(PrometheusEndpointOptions options, FamiliesHandler families);
  ~PrometheusEndpoint();
  PrometheusEndpoint(const PrometheusEndpoint&) = delete;
  PrometheusEndpoint& operator=(const PrometheusEndpoint&) = delete;

  // The bound port (the chosen one when options.port was 0).
  unsigned short port() const noexcept;
  // "host:port" as bound, e.g. "127.0.0.1:9431".
  std::string address() const;
  // "http://host:port/metrics", or "https://..." when the web configuration
  // in force serves TLS.
  std::string url() const;
  // What the web configuration in force protects the endpoint with
  // (EndpointSecurity::summary); "" without one.
  std::string security_summary() const;
  EndpointFigures figures() const noexcept;

  // Stops the server threads, joins them, closes the listener and every
  // open connection. Returns false when a handler still ran after timeout
  // (the destructor then waits for it and closes the rest). Idempotent.
  bool stop(std::chrono::milliseconds timeout) noexcept;

  struct Impl;

 private:
  PrometheusEndpoint(PrometheusEndpointOptions options, ScrapeHandler handler,
                     FamiliesHandler families);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenspeed::metrics
