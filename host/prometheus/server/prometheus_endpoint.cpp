// prometheus_endpoint.cpp — the /metrics endpoint's life: binding the
// listener, the server and render threads, the counters, the fault log of its
// handlers, and stopping. What a connection does is in connection,
// who is answered in access_control, what a scrape is answered with
// in scrape_answer. Never blocks a producer: it only calls the
// scrape handler.
#include "prometheus/server/prometheus_endpoint.hpp"

#include <exception>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio/ip/tcp.hpp>

#include "prometheus/server/prometheus_endpoint_impl.hpp"
#include "config/metrics_flag_table.hpp"
#include "core/fault_log.hpp"
#include "core/startup_error.hpp"
#include "core/thread_safety.hpp"

namespace tokenspeed::metrics {

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
    MutexLock lock(handler_log_mutex);
    handler_log.message("a connection handler threw (" + what + "); still serving",
                        FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the endpoint keeps serving, which is what matters.
  }
}

void PrometheusEndpoint::Impl::thread_finished() {
  MutexLock lock(done_mutex);
  ++finished;
  done_cv.notify_all();
}

PrometheusEndpoint::PrometheusEndpoint(PrometheusEndpointOptions options, ScrapeHandler handler)
    : PrometheusEndpoint(std::move(options), std::move(handler), FamiliesHandler{}) {}

PrometheusEndpoint::PrometheusEndpoint(PrometheusEndpointOptions options, FamiliesHandler families)
    : PrometheusEndpoint(std::move(options), ScrapeHandler{}, std::move(families)) {}

PrometheusEndpoint::PrometheusEndpoint(PrometheusEndpointOptions options, ScrapeHandler handler,
                                       FamiliesHandler families)
    : impl_(std::make_unique<Impl>()) {
  Impl& impl = *impl_;
  impl.options = std::move(options);
  if (impl.options.threads == 0) impl.options.threads = 1;
  impl.sessions.emplace(impl.options.max_connections);
  impl.renderer.emplace(std::move(handler), std::move(families), impl.options.gzip_level);
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
      throw StartupError({"prometheus", "", flag_spelling(metrics_flag(&Options::host))},
                         "cannot resolve metrics host '" + host + "'" +
                             (ec ? ": " + ec.message() : std::string()));
    }
    endpoint = results.begin()->endpoint();
  }
  auto fail = [&](const char* step) {
    throw StartupError({"prometheus", "", flag_spelling(metrics_flag(&Options::port))},
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
  impl.renderer->start(impl.options.threads);
}

PrometheusEndpoint::~PrometheusEndpoint() {
  stop(std::chrono::seconds(5));
  for (std::thread& thread : impl_->threads) {
    if (thread.joinable()) thread.join();
  }
  // Scrapes still waiting hold their connections: close them while the
  // io_context they belong to still exists.
  impl_->renderer->wait_stopped(std::chrono::steady_clock::time_point::max());
  impl_->renderer->drop_waiting();
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

EndpointFigures PrometheusEndpoint::figures() const noexcept {
  const Impl& impl = *impl_;
  EndpointFigures counters{impl.accepted.load(), impl.rejected.load(),  impl.evicted.load(),
                           impl.open.load(),     impl.requests.load(),  impl.idle_timeouts.load(),
                           impl.timeouts.load(), impl.oversized.load(), impl.bad_requests.load()};
  counters.tls_handshake_failures = impl.tls_handshake_failures.load();
  counters.unauthorized = impl.unauthorized.load();
  counters.rate_limited = impl.rate_limited.load();
  counters.credential_checks_refused = impl.checks_refused.load();
  if (impl.credential_checks)
    counters.credential_checks_skipped = impl.credential_checks->figures().skipped;
  if (impl.security) {
    counters.web_config_reloads = impl.security->reloads();
    counters.web_config_reload_failures = impl.security->failed_reloads();
    counters.web_config_reloads_refused_weaker = impl.security->refused_weaker();
  }
  return counters;
}

bool PrometheusEndpoint::stop(std::chrono::milliseconds timeout) noexcept {
  Impl& impl = *impl_;
  {
    MutexLock lock(impl.done_mutex);
    if (impl.stopped)
      return impl.finished == impl.threads.size() &&
             impl.renderer->wait_stopped(std::chrono::steady_clock::now());
    impl.stopped = true;
  }
  impl.renderer->request_stop();
  // Checks of passwords still queued are dropped with their connections.
  if (impl.credential_checks) impl.credential_checks->stop();
  impl.work.reset();
  impl.io->stop();
  MutexLock lock(impl.done_mutex);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (impl.finished != impl.threads.size() &&
         impl.done_cv.wait_until(impl.done_mutex, deadline) == std::cv_status::no_timeout) {
  }
  const bool done = impl.finished == impl.threads.size();
  lock.unlock();
  if (!done || !impl.renderer->wait_stopped(deadline)) return false;
  for (std::thread& thread : impl.threads) {
    if (thread.joinable()) thread.join();
  }
  // No server thread runs any more: close the listener, then destroy the
  // pending handlers, which owns and so closes every open connection.
  // The queue itself stays (empty) until the destructor: figures() reads it.
  if (impl.credential_checks) impl.credential_checks->join();
  impl.renderer->drop_waiting();
  impl.acceptor.reset();
  impl.io.reset();
  return true;
}

}  // namespace tokenspeed::metrics
