// access_control.cpp — who a request of the /metrics endpoint is
// answered for: the web configuration's rate limit (one bucket for the
// authenticated scraper, one for the others) and its basic-auth users, checked
// off the I/O threads (bcrypt on the checking thread), and the refusals
// (401, 429, 503). Never logs a user name or a password: either may be a secret.
// Tested in test/unit/prometheus/server/prometheus_endpoint_test.cpp and
// test/unit/prometheus/server/web_security_test.cpp.
#include <cctype>
#include <memory>
#include <string>
#include <utility>

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sys/socket.h>

#include <boost/asio/post.hpp>

#include "core/thread_safety.hpp"
#include "prometheus/server/credential_check_queue.hpp"
#include "prometheus/server/connection.hpp"

namespace tokenspeed::metrics {

// Decodes the credentials of an "Authorization: Basic ..." header value;
// false when it is not one.
bool decode_basic_credentials(std::string_view value, std::string& user, std::string& password) {
  constexpr std::string_view scheme = "basic ";
  if (value.size() <= scheme.size()) return false;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(value[i])) != scheme[i]) return false;
  }
  value = trim_http_whitespace(value.substr(scheme.size()));
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

// False (counted) when a request of bucket is over the rate limit.
bool EndpointSession::admit(RequestRateLimit::Bucket bucket) {
  if (server_.rate_limit.admit(security_->rate_limit, bucket, Clock::now())) return true;
  server_.rate_limited.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// A check queued for the checking thread: skipped when the session was
// evicted or its client went away meanwhile; its answer is posted back to
// the session's strand. Holds the password until it is dropped, then wipes it.
class EndpointSession::Check final : public CredentialCheck {
 public:
  Check(std::shared_ptr<EndpointSession> session, std::string user, std::string password)
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
  std::shared_ptr<EndpointSession> session_;
  std::shared_ptr<const EndpointSecurity> security_;  // the session's, when it asked
  std::string user_;
  std::string password_;
};

// bcrypt takes tens of milliseconds: on the checking thread. Meanwhile the
// connection waits as if for a request (evictable), and a client that
// closes it is noticed (its check then skipped).
void EndpointSession::check_credentials(std::string user, std::string password) {
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
bool EndpointSession::check_wanted() {
  return !hung_up_.load(std::memory_order_acquire) && !evicted();
}

void EndpointSession::on_checked(bool verified) {
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
void EndpointSession::watch_for_hangup() {
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
        self->hung_up_.store(true, std::memory_order_release);
        self->close();
      });
}

bool EndpointSession::hung_up() { return hung_up_.load(std::memory_order_acquire); }

void EndpointSession::unauthorized() {
  server_.unauthorized.fetch_add(1, std::memory_order_relaxed);
  server_.log_unauthorized();
  send_refusal(http::status::unauthorized);
}

// 401, 429 or 503 on a connection that stays open: the client may try again.
void EndpointSession::send_refusal(http::status status) {
  server_.sessions->mark_refused(ticket_);  // evicted before the others at the limit
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

void PrometheusEndpoint::Impl::log_unauthorized() noexcept {
  try {
    MutexLock lock(handler_log_mutex);
    handler_log.report("requests refused (401): credentials missing or wrong", 1,
                       FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the refusal is still counted.
  }
}

void PrometheusEndpoint::Impl::log_checks_refused() noexcept {
  try {
    MutexLock lock(handler_log_mutex);
    handler_log.report("requests refused (503): too many credential checks waiting", 1,
                       FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the refusal is still counted.
  }
}

}  // namespace tokenspeed::metrics
