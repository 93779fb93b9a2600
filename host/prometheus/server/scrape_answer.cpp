// scrape_answer.cpp — what the /metrics endpoint answers an admitted
// request: 404 and 405 at once, a scrape from the render it waited for
// (scrape_renderer.hpp), gzip-encoded when the client accepts it, in the
// format its Accept asks for.
// Tested in test/unit/prometheus/server/prometheus_endpoint_test.cpp.
#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/post.hpp>

#include "prometheus/server/connection.hpp"
#include "prometheus/scrape/prometheus_exposition.hpp"
#include "prometheus/scrape/protobuf_exposition.hpp"

namespace tokenspeed::metrics {

namespace {

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
    std::string_view param = trim_http_whitespace(params.substr(0, semi));
    params = semi == std::string_view::npos ? std::string_view() : params.substr(semi + 1);
    if (param.size() >= 2 && (param[0] == 'q' || param[0] == 'Q') && param[1] == '=') {
      std::string value(trim_http_whitespace(param.substr(2)));
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
    const std::string_view coding = trim_http_whitespace(element.substr(0, semi));
    const double q = semi == std::string_view::npos ? 1.0 : quality(element.substr(semi + 1));
    if (iequals(coding, "gzip") || iequals(coding, "x-gzip"))
      gzip_q = q;
    else if (coding == "*")
      any_q = q;
  }
  if (gzip_q) return *gzip_q > 0;
  return any_q && *any_q > 0;
}

// An admitted request: answered at once, or queued for the next render.
void EndpointSession::route() {
  server_.sessions->mark_authorized(ticket_);  // evicted after the others at the limit
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
  const auto media = request[http::field::accept];
  const ExpositionFormat format =
      negotiate_exposition(std::string_view(media.data(), media.size()));
  scrape_protobuf_ = format == ExpositionFormat::protobuf && server_.renderer->has_families();
  // Answered on the session's own strand once a render thread has rendered.
  server_.renderer->request(
      ScrapeWanted{scrape_gzip_, scrape_protobuf_},
      [self = shared_from_this()](std::shared_ptr<const RenderedScrape> done) {
        auto executor = self->executor();
        asio::post(executor, [self, done = std::move(done)] { self->on_rendered(*done); });
      });
}

// Posted to the session's strand by a render thread: answers the scrape
// the session read last.
void EndpointSession::on_rendered(const RenderedScrape& rendered) {
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
  const std::string_view content_type =
      scrape_protobuf_ ? kProtobufExpositionContentType : kExpositionContentType;
  response_.set(http::field::content_type,
                beast::string_view(content_type.data(), content_type.size()));
  response_.set(http::field::vary,
                server_.renderer->has_families() ? "Accept, Accept-Encoding" : "Accept-Encoding");
  const std::string& plain = scrape_protobuf_ ? rendered.protobuf : rendered.body;
  const std::string& gzipped = scrape_protobuf_ ? rendered.protobuf_gzipped : rendered.gzipped;
  const std::string& body = scrape_gzip_ ? gzipped : plain;
  if (scrape_gzip_) response_.set(http::field::content_encoding, "gzip");
  if (scrape_head_) {
    response_.content_length(body.size());  // the length a GET would send
  } else {
    response_.body() = body;
    response_.prepare_payload();
  }
  write_response();
}

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

}  // namespace tokenspeed::metrics
