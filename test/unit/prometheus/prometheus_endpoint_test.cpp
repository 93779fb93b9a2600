// prometheus_endpoint_test.cpp — the /metrics server over real loopback HTTP:
// GET/HEAD, 404, 405, keep-alive, gzip, concurrent scrapes, idle and slow
// clients, oversized requests, port in use, stop.
#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <zlib.h>

#include "prometheus/prometheus_endpoint.hpp"
#include "core/startup_error.hpp"

using namespace tokenspeed::metrics;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

const std::string kBody = "# TYPE tokenspeed:x gauge\ntokenspeed:x 1\n";

PrometheusEndpointOptions test_options() {
  PrometheusEndpointOptions options;
  options.port = 0;
  return options;
}

struct Client {
  asio::io_context io;
  tcp::socket socket{io};
  beast::flat_buffer buffer;

  explicit Client(unsigned short port) {
    socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
    // Hang guard only: a broken server fails the test instead of blocking it.
    timeval tv{30, 0};
    ::setsockopt(socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }

  http::response<http::string_body> request(http::verb method, const std::string& target,
                                            const std::string& accept_encoding = "",
                                            bool keep_alive = true) {
    http::request<http::empty_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!accept_encoding.empty()) req.set(http::field::accept_encoding, accept_encoding);
    req.keep_alive(keep_alive);
    http::write(socket, req);
    http::response_parser<http::string_body> parser;
    parser.skip(method == http::verb::head);
    parser.body_limit(64 * 1024 * 1024);
    http::read(socket, buffer, parser);
    return parser.release();
  }

  // True when the server closed the connection (EOF or reset).
  bool closed_by_server() {
    char byte;
    beast::error_code ec;
    socket.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
};

std::string gunzip(const std::string& data) {
  z_stream stream{};
  REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK);
  std::string out(1 << 20, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  stream.avail_in = static_cast<uInt>(data.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&stream, Z_FINISH);
  out.resize(stream.total_out);
  inflateEnd(&stream);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

}  // namespace

TEST_CASE("GET /metrics answers 200 with the exposition in text format 0.0.4") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  REQUIRE(endpoint.port() != 0);
  Client client(endpoint.port());
  auto res = client.request(http::verb::get, "/metrics");
  CHECK(res.result() == http::status::ok);
  CHECK(res[http::field::content_type] == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(res.body() == kBody);
  CHECK(endpoint.address() == "127.0.0.1:" + std::to_string(endpoint.port()));
}

TEST_CASE("HEAD /metrics answers the headers of GET without a body") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  auto res = client.request(http::verb::head, "/metrics");
  CHECK(res.result() == http::status::ok);
  CHECK(res[http::field::content_length] == std::to_string(kBody.size()));
  CHECK(res.body().empty());
  // The connection is still usable: no body bytes were sent.
  CHECK(client.request(http::verb::get, "/metrics").body() == kBody);
}

TEST_CASE("other paths answer 404") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  CHECK(client.request(http::verb::get, "/").result() == http::status::not_found);
  CHECK(client.request(http::verb::get, "/metricsx").result() == http::status::not_found);
  CHECK(client.request(http::verb::get, "/metrics?x=1").result() == http::status::ok);
  // HEAD of another path: 404 without a body, the connection stays usable.
  auto head = client.request(http::verb::head, "/other");
  CHECK(head.result() == http::status::not_found);
  CHECK(head.body().empty());
  CHECK(client.request(http::verb::get, "/metrics").body() == kBody);
}

TEST_CASE("other methods answer 405 with an Allow header") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  for (auto method :
       {http::verb::post, http::verb::put, http::verb::delete_, http::verb::options}) {
    auto res = client.request(method, "/metrics");
    CHECK(res.result() == http::status::method_not_allowed);
    CHECK(res[http::field::allow] == "GET, HEAD");
  }
}

TEST_CASE("connections are kept alive across scrapes") {
  std::atomic<int> scrapes{0};
  PrometheusEndpoint endpoint(test_options(), [&] {
    ++scrapes;
    return kBody;
  });
  Client client(endpoint.port());
  for (int i = 0; i < 3; ++i) {
    auto res = client.request(http::verb::get, "/metrics");
    CHECK(res.keep_alive());
  }
  CHECK(scrapes == 3);
  CHECK(endpoint.counters().connections_accepted == 1);
  CHECK(endpoint.counters().requests == 3);
  // Connection: close is honoured.
  auto res = client.request(http::verb::get, "/metrics", "", false);
  CHECK_FALSE(res.keep_alive());
  CHECK(client.closed_by_server());
}

TEST_CASE("the body is gzip-encoded when the client accepts gzip, and only then") {
  std::string big;
  for (int i = 0; i < 2000; ++i)
    big += "tokenspeed:x{model_name=\"m\",dp_rank=\"" + std::to_string(i) + "\"} 1\n";
  PrometheusEndpoint endpoint(test_options(), [&] { return big; });
  Client client(endpoint.port());
  auto res = client.request(http::verb::get, "/metrics", "gzip, deflate");
  CHECK(res[http::field::content_encoding] == "gzip");
  CHECK(res[http::field::vary] == "Accept-Encoding");
  CHECK(res.body().size() < big.size() / 4);
  CHECK(gunzip(res.body()) == big);
  res = client.request(http::verb::get, "/metrics", "identity");
  CHECK(res[http::field::content_encoding] == "");
  CHECK(res.body() == big);
  res = client.request(http::verb::get, "/metrics", "gzip;q=0, *");
  CHECK(res.body() == big);
}

TEST_CASE("Accept-Encoding is read with its q values") {
  CHECK(accepts_gzip("gzip"));
  CHECK(accepts_gzip("deflate, GZIP;q=0.5"));
  CHECK(accepts_gzip("*"));
  CHECK(accepts_gzip("br, *;q=0.1"));
  CHECK_FALSE(accepts_gzip(""));
  CHECK_FALSE(accepts_gzip("identity"));
  CHECK_FALSE(accepts_gzip("gzip;q=0"));
  CHECK_FALSE(accepts_gzip("gzip;q=0.0, *"));
  CHECK_FALSE(accepts_gzip("*;q=0"));
}

TEST_CASE("several scrapes are served at the same time: a stuck render holds up no other") {
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> renders{0};
  PrometheusEndpointOptions options = test_options();
  options.threads = 2;
  PrometheusEndpoint endpoint(options, [&] {
    if (renders.fetch_add(1) == 0) {  // the first render is stuck until released
      std::unique_lock lock(mutex);
      cv.wait(lock, [&] { return release; });
    }
    return kBody;
  });
  Client stuck(endpoint.port());
  asio::write(stuck.socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (renders < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(renders == 1);
  Client other(endpoint.port());
  CHECK(other.request(http::verb::get, "/metrics").body() == kBody);
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  http::response_parser<http::string_body> parser;
  http::read(stuck.socket, stuck.buffer, parser);
  CHECK(parser.get().body() == kBody);
}

TEST_CASE("an idle client is closed after the idle timeout, a slow one after the read timeout") {
  PrometheusEndpointOptions options = test_options();
  options.idle_timeout = std::chrono::milliseconds(200);
  options.read_timeout = std::chrono::milliseconds(200);
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  Client idle(endpoint.port());
  CHECK(idle.closed_by_server());
  Client slow(endpoint.port());
  asio::write(slow.socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n")));
  CHECK(slow.closed_by_server());  // the request never completed
  // The server counts the timeout right after closing: wait for it (hang guard).
  for (int i = 0; i < 1000 && endpoint.counters().timeouts + endpoint.counters().idle_timeouts < 2;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(endpoint.counters().idle_timeouts == 1);
  CHECK(endpoint.counters().timeouts == 1);
  // The server still answers others.
  Client client(endpoint.port());
  CHECK(client.request(http::verb::get, "/metrics").body() == kBody);
}

TEST_CASE("a kept-alive connection is closed after the idle timeout, not the read timeout") {
  PrometheusEndpointOptions options = test_options();
  options.idle_timeout = std::chrono::milliseconds(200);
  options.read_timeout = std::chrono::seconds(30);
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  Client client(endpoint.port());
  CHECK(client.request(http::verb::get, "/metrics").body() == kBody);
  CHECK(client.closed_by_server());
  // The server counts the timeout right after closing: wait for it (hang guard).
  for (int i = 0; i < 1000 && endpoint.counters().idle_timeouts < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(endpoint.counters().idle_timeouts == 1);
}

TEST_CASE("an oversized request is refused and the connection closed") {
  PrometheusEndpointOptions options = test_options();
  options.max_request_bytes = 4096;
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  Client client(endpoint.port());
  http::request<http::empty_body> req{http::verb::get, "/metrics", 11};
  req.set(http::field::host, "x");
  req.set("X-Filler", std::string(16 * 1024, 'a'));
  beast::error_code ec;
  http::write(client.socket, req, ec);
  http::response<http::string_body> res;
  http::read(client.socket, client.buffer, res, ec);
  REQUIRE_FALSE(ec);
  CHECK(res.result() == http::status::request_header_fields_too_large);
  CHECK(client.closed_by_server());

  Client body_client(endpoint.port());
  http::request<http::string_body> post{http::verb::get, "/metrics", 11};
  post.set(http::field::host, "x");
  post.body() = std::string(16 * 1024, 'b');
  post.prepare_payload();
  http::write(body_client.socket, post, ec);
  http::response<http::string_body> res2;
  http::read(body_client.socket, body_client.buffer, res2, ec);
  REQUIRE_FALSE(ec);
  CHECK(res2.result() == http::status::payload_too_large);
  CHECK(endpoint.counters().oversized_requests == 2);
}

TEST_CASE("a port already in use is a startup error that names the port") {
  PrometheusEndpoint first(test_options(), [] { return kBody; });
  PrometheusEndpointOptions options = test_options();
  options.port = first.port();
  try {
    PrometheusEndpoint second(options, [] { return kBody; });
    FAIL("the second endpoint bound a port in use");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "--metrics-port");
    CHECK(std::string(error.what()).find(std::to_string(first.port())) != std::string::npos);
  }
}

TEST_CASE("an unresolvable host is a startup error naming --metrics-host") {
  PrometheusEndpointOptions options = test_options();
  options.host = "no-such-host.invalid";
  try {
    PrometheusEndpoint endpoint(options, [] { return kBody; });
    FAIL("started");
  } catch (const StartupError& error) {
    CHECK(error.context().key == "--metrics-host");
  }
}

TEST_CASE("stop closes the listener and returns within its timeout; it is idempotent") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  CHECK(client.request(http::verb::get, "/metrics").result() == http::status::ok);
  const unsigned short port = endpoint.port();
  CHECK(endpoint.stop(std::chrono::seconds(10)));
  CHECK(client.closed_by_server());  // the kept-alive connection is closed too
  CHECK(endpoint.stop(std::chrono::seconds(10)));
  // The port is free again.
  PrometheusEndpointOptions options = test_options();
  options.port = port;
  PrometheusEndpoint again(options, [] { return kBody; });
  CHECK(again.port() == port);
}

TEST_CASE("a scrape handler that throws answers 500 and the server keeps serving") {
  std::atomic<bool> fail{true};
  PrometheusEndpoint endpoint(test_options(), [&]() -> std::string {
    if (fail) throw std::runtime_error("broken");
    return kBody;
  });
  Client client(endpoint.port());
  CHECK(client.request(http::verb::get, "/metrics").result() ==
        http::status::internal_server_error);
  fail = false;
  CHECK(client.request(http::verb::get, "/metrics").body() == kBody);
}

TEST_CASE("at max_connections a new connection evicts the one waiting longest for a request") {
  PrometheusEndpointOptions options = test_options();
  options.max_connections = 2;
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  auto wait_for_accepted = [&](std::uint64_t count) {
    for (int i = 0; i < 1000 && endpoint.counters().connections_accepted < count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    REQUIRE(endpoint.counters().connections_accepted == count);
  };
  Client idle(endpoint.port());  // sends nothing
  wait_for_accepted(1);
  Client incomplete(endpoint.port());
  asio::write(incomplete.socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\n")));
  wait_for_accepted(2);
  Client newest(endpoint.port());
  CHECK(newest.request(http::verb::get, "/metrics").body() == kBody);
  CHECK(idle.closed_by_server());  // waiting since before the other came
  CHECK(endpoint.counters().connections_evicted == 1);
  // The next one evicts the incomplete request: newest waits since later.
  Client another(endpoint.port());
  CHECK(another.request(http::verb::get, "/metrics").body() == kBody);
  CHECK(incomplete.closed_by_server());
  CHECK(endpoint.counters().connections_evicted == 2);
  CHECK(endpoint.counters().connections_rejected == 0);
  CHECK(newest.request(http::verb::get, "/metrics").body() == kBody);  // still open
}

TEST_CASE("at max_connections with every connection busy, a new one is closed at once") {
  PrometheusEndpointOptions options = test_options();
  options.max_connections = 1;
  std::mutex mutex;
  std::condition_variable cv;
  bool in_handler = false;
  bool release = false;
  PrometheusEndpoint endpoint(options, [&] {
    std::unique_lock lock(mutex);
    in_handler = true;
    cv.notify_all();
    cv.wait(lock, [&] { return release; });
    return kBody;
  });
  Client busy(endpoint.port());
  std::thread scrape([&] { CHECK(busy.request(http::verb::get, "/metrics").body() == kBody); });
  {
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return in_handler; });
  }
  Client second(endpoint.port());
  CHECK(second.closed_by_server());
  CHECK(endpoint.counters().connections_rejected == 1);
  CHECK(endpoint.counters().connections_evicted == 0);
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  scrape.join();
}

TEST_CASE("pipelined requests are answered in order on one connection") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  asio::write(client.socket,
              asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                                       "GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n"
                                       "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")));
  http::response<http::string_body> first;
  http::read(client.socket, client.buffer, first);
  CHECK(first.result() == http::status::ok);
  CHECK(first.body() == kBody);
  http::response<http::string_body> second;
  http::read(client.socket, client.buffer, second);
  CHECK(second.result() == http::status::not_found);
  http::response_parser<http::string_body> third;
  third.skip(true);
  http::read(client.socket, client.buffer, third);
  CHECK(third.get().result() == http::status::ok);
  CHECK(endpoint.counters().requests == 3);
}

TEST_CASE("a malformed request is answered 400 and counted") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  asio::write(client.socket, asio::buffer(std::string("GET /metrics HTTP/9\r\n\r\n")));
  http::response<http::string_body> res;
  http::read(client.socket, client.buffer, res);
  CHECK(res.result() == http::status::bad_request);
  CHECK(client.closed_by_server());
  CHECK(endpoint.counters().bad_requests == 1);
}

TEST_CASE("while every connection waits for a slow render, a new one is closed at once") {
  // 64 clients hold connections with a scrape in progress and every render
  // is stuck: accepting and refusing does not wait for a render thread.
  PrometheusEndpointOptions options = test_options();
  options.max_connections = 64;
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> renders{0};
  PrometheusEndpoint endpoint(options, [&] {
    renders.fetch_add(1);
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return release; });
    return kBody;
  });
  std::vector<std::unique_ptr<Client>> waiting;
  const std::string request = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
  for (std::size_t i = 0; i < options.max_connections; ++i) {
    waiting.push_back(std::make_unique<Client>(endpoint.port()));
    asio::write(waiting.back()->socket, asio::buffer(request));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (endpoint.counters().requests < options.max_connections &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(endpoint.counters().requests == options.max_connections);

  Client newest(endpoint.port());
  CHECK(newest.closed_by_server());
  CHECK(endpoint.counters().connections_rejected == 1);
  CHECK(renders <= 2);  // the render threads, both still stuck
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  // Every waiting scrape is answered; the ones that queued share a render.
  for (auto& client : waiting) {
    http::response_parser<http::string_body> parser;
    http::read(client->socket, client->buffer, parser);
    CHECK(parser.get().result() == http::status::ok);
    CHECK(parser.get().body() == kBody);
  }
  CHECK(renders <= 4);
}

TEST_CASE("scrapes that arrive while a render runs share the next render, gzip or not") {
  std::mutex mutex;
  std::condition_variable cv;
  bool release = false;
  std::atomic<int> renders{0};
  PrometheusEndpointOptions options = test_options();
  options.threads = 1;
  PrometheusEndpoint endpoint(options, [&] {
    const int render = renders.fetch_add(1);
    std::unique_lock lock(mutex);
    cv.wait(lock, [&] { return release; });
    return kBody + "# render " + std::to_string(render) + "\n";
  });
  Client first(endpoint.port());
  asio::write(first.socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (renders < 1 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(renders == 1);
  std::vector<std::unique_ptr<Client>> later;
  for (int i = 0; i < 6; ++i) {
    later.push_back(std::make_unique<Client>(endpoint.port()));
    const std::string encoding = i % 2 == 0 ? "Accept-Encoding: gzip\r\n" : "";
    asio::write(later.back()->socket,
                asio::buffer("GET /metrics HTTP/1.1\r\nHost: x\r\n" + encoding + "\r\n"));
  }
  while (endpoint.counters().requests < 7 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  REQUIRE(endpoint.counters().requests == 7);
  {
    std::lock_guard lock(mutex);
    release = true;
  }
  cv.notify_all();
  http::response_parser<http::string_body> parser;
  http::read(first.socket, first.buffer, parser);
  CHECK(parser.get().body() == kBody + "# render 0\n");
  for (std::size_t i = 0; i < later.size(); ++i) {
    http::response_parser<http::string_body> later_parser;
    later_parser.body_limit(1 << 20);
    http::read(later[i]->socket, later[i]->buffer, later_parser);
    const std::string body =
        i % 2 == 0 ? gunzip(later_parser.get().body()) : later_parser.get().body();
    CHECK(body == kBody + "# render 1\n");
  }
  CHECK(renders == 2);
}
