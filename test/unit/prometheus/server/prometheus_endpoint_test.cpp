// prometheus_endpoint_test.cpp — the /metrics server over real loopback HTTP:
// GET/HEAD, 404, 405, keep-alive, gzip, concurrent scrapes, idle and slow
// clients, oversized requests, port in use, stop; with a web configuration,
// a remembered scraper under a flood of wrong passwords, the bounded and
// evictable credential checks, the rate limit's two buckets, and plain HTTP
// sent to the TLS port.
#include <catch2/catch.hpp>

#include <crypt.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <zlib.h>

#include "core/startup_error.hpp"
#include "eventually.hpp"
#include "prometheus/server/prometheus_endpoint.hpp"

using namespace tokenspeed::metrics;
using test::eventually;
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

// A temporary directory for a web configuration (and certificates).
struct TempDir {
  std::filesystem::path dir;
  TempDir() {
    char name[] = "/tmp/tsm-endpoint-test-XXXXXX";
    REQUIRE(::mkdtemp(name) != nullptr);
    dir = name;
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name, std::ios::trunc) << text;
    return (dir / name).string();
  }
};

// A bcrypt hash of password at cost, made with libxcrypt.
std::string bcrypt_hash(const std::string& password, int cost) {
  char setting[CRYPT_GENSALT_OUTPUT_SIZE];
  REQUIRE(crypt_gensalt_rn("$2b$", cost, nullptr, 0, setting, sizeof setting) != nullptr);
  crypt_data data{};
  const char* hash = crypt_r(password.c_str(), setting, &data);
  REQUIRE(hash != nullptr);
  return hash;
}

// A well-formed bcrypt hash of cost that no password is expected to match:
// checking a password against it costs a full bcrypt at that cost, without
// the test spending that time to make it.
std::string slow_unmatchable_hash(int cost) {
  const std::string fast = bcrypt_hash("never sent", 4);
  return "$2b$" + std::to_string(cost) + fast.substr(6);
}

// "Basic " credentials of user and password.
std::string basic(const std::string& user, const std::string& password) {
  const std::string pair = user + ":" + password;
  std::string encoded(4 * ((pair.size() + 2) / 3) + 1, '\0');
  const int size = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                   reinterpret_cast<const unsigned char*>(pair.data()),
                                   static_cast<int>(pair.size()));
  encoded.resize(static_cast<std::size_t>(size));
  return "Basic " + encoded;
}

// Sends GET /metrics with authorization (none when empty) on client's
// connection and reads the answer; nullopt when the connection failed.
std::optional<http::response<http::string_body>> get_metrics(Client& client,
                                                             const std::string& authorization,
                                                             bool keep_alive = true) {
  http::request<http::empty_body> request{http::verb::get, "/metrics", 11};
  request.set(http::field::host, "127.0.0.1");
  if (!authorization.empty()) request.set(http::field::authorization, authorization);
  request.keep_alive(keep_alive);
  beast::error_code ec;
  http::write(client.socket, request, ec);
  if (ec) return std::nullopt;
  http::response<http::string_body> response;
  http::read(client.socket, client.buffer, response, ec);
  if (ec) return std::nullopt;
  return response;
}

// The status of one scrape on a fresh connection (0 when the connection was
// closed without an answer).
unsigned scrape_status(unsigned short port, const std::string& authorization) {
  Client client(port);
  const auto response = get_metrics(client, authorization, false);
  return response ? response->result_int() : 0;
}

PrometheusEndpointOptions options_with(const std::string& web_config) {
  PrometheusEndpointOptions options = test_options();
  options.web_config_file = web_config;
  return options;
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
  CHECK(endpoint.figures().connections_accepted == 1);
  CHECK(endpoint.figures().requests == 3);
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
  REQUIRE(eventually([&] { return renders >= 1; }));
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
  // The server counts the timeout right after closing: wait for it.
  CHECK(eventually(
      [&] { return endpoint.figures().timeouts + endpoint.figures().idle_timeouts >= 2; }));
  CHECK(endpoint.figures().idle_timeouts == 1);
  CHECK(endpoint.figures().timeouts == 1);
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
  // The server counts the timeout right after closing: wait for it.
  CHECK(eventually([&] { return endpoint.figures().idle_timeouts >= 1; }));
  CHECK(endpoint.figures().idle_timeouts == 1);
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
  CHECK(endpoint.figures().oversized_requests == 2);
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
    REQUIRE(eventually([&] { return endpoint.figures().connections_accepted >= count; }));
    REQUIRE(endpoint.figures().connections_accepted == count);
  };
  Client idle(endpoint.port());  // sends nothing
  wait_for_accepted(1);
  Client incomplete(endpoint.port());
  asio::write(incomplete.socket, asio::buffer(std::string("GET /metrics HTTP/1.1\r\n")));
  wait_for_accepted(2);
  Client newest(endpoint.port());
  CHECK(newest.request(http::verb::get, "/metrics").body() == kBody);
  CHECK(idle.closed_by_server());  // waiting since before the other came
  CHECK(endpoint.figures().connections_evicted == 1);
  // The next one evicts the incomplete request: newest waits since later.
  Client another(endpoint.port());
  CHECK(another.request(http::verb::get, "/metrics").body() == kBody);
  CHECK(incomplete.closed_by_server());
  CHECK(endpoint.figures().connections_evicted == 2);
  CHECK(endpoint.figures().connections_rejected == 0);
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
  CHECK(endpoint.figures().connections_rejected == 1);
  CHECK(endpoint.figures().connections_evicted == 0);
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
  CHECK(endpoint.figures().requests == 3);
}

TEST_CASE("a malformed request is answered 400 and counted") {
  PrometheusEndpoint endpoint(test_options(), [] { return kBody; });
  Client client(endpoint.port());
  asio::write(client.socket, asio::buffer(std::string("GET /metrics HTTP/9\r\n\r\n")));
  http::response<http::string_body> res;
  http::read(client.socket, client.buffer, res);
  CHECK(res.result() == http::status::bad_request);
  CHECK(client.closed_by_server());
  CHECK(endpoint.figures().bad_requests == 1);
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
  REQUIRE(eventually([&] { return endpoint.figures().requests >= options.max_connections; }));
  REQUIRE(endpoint.figures().requests == options.max_connections);

  Client newest(endpoint.port());
  CHECK(newest.closed_by_server());
  CHECK(endpoint.figures().connections_rejected == 1);
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
  REQUIRE(eventually([&] { return renders >= 1; }));
  REQUIRE(renders == 1);
  std::vector<std::unique_ptr<Client>> later;
  for (int i = 0; i < 6; ++i) {
    later.push_back(std::make_unique<Client>(endpoint.port()));
    const std::string encoding = i % 2 == 0 ? "Accept-Encoding: gzip\r\n" : "";
    asio::write(later.back()->socket,
                asio::buffer("GET /metrics HTTP/1.1\r\nHost: x\r\n" + encoding + "\r\n"));
  }
  REQUIRE(eventually([&] { return endpoint.figures().requests >= 7; }));
  REQUIRE(endpoint.figures().requests == 7);
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

TEST_CASE(
    "a scraper whose credentials are remembered is answered while 64 connections flood "
    "wrong passwords") {
  // Each wrong password costs a bcrypt of cost 10 on the one checking
  // thread. Before, the 64 connections waited for it unevictably and the
  // scraper's connections were refused at the limit (0 of 22 answered).
  TempDir dir;
  PrometheusEndpointOptions options = options_with(
      dir.write("web.yml", "basic_auth_users:\n  prometheus: " + bcrypt_hash("right", 10) + "\n"));
  REQUIRE(options.max_connections == 64);
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  const std::string right = basic("prometheus", "right");
  REQUIRE(scrape_status(endpoint.port(), right) == 200);  // verified once, then remembered

  std::atomic<bool> stop{false};
  std::atomic<int> answered_401{0}, answered_503_retry{0}, answered_other{0};
  std::vector<std::thread> flood;
  for (int i = 0; i < 64; ++i) {
    flood.emplace_back([&, i] {
      const std::string wrong = basic("prometheus", "guess-" + std::to_string(i));
      while (!stop) {  // reconnects when closed (evicted), as an attacker would
        try {
          Client client(endpoint.port());
          while (!stop) {
            const auto response = get_metrics(client, wrong);
            if (!response) break;
            if (response->result() == http::status::unauthorized)
              ++answered_401;
            else if (response->result() == http::status::service_unavailable &&
                     (*response)[http::field::retry_after] == "1")
              ++answered_503_retry;
            else
              ++answered_other;
          }
        } catch (const std::exception&) {
          // Connection refused once the endpoint stops: the loop ends.
        }
      }
    });
  }
  // The flood at full strength: every flooding connection sent a request,
  // and the checking queue is full (16 waiting, the others answered 503 at
  // once, again and again). Before, nothing was ever refused at once.
  CHECK(eventually([&] { return endpoint.figures().requests >= 1 + 64; }));
  CHECK(eventually([&] { return endpoint.figures().credential_checks_refused >= 64; }));

  constexpr int kScrapes = 10;
  std::vector<unsigned> statuses;
  for (int i = 0; i < kScrapes; ++i) statuses.push_back(scrape_status(endpoint.port(), right));
  const EndpointFigures during = endpoint.figures();
  stop = true;
  CHECK(endpoint.stop(std::chrono::seconds(60)));
  for (std::thread& thread : flood) thread.join();

  CHECK(statuses == std::vector<unsigned>(kScrapes, 200));
  // The flood ran meanwhile, answered 401 or 503 with Retry-After (the
  // checks themselves, starved of CPU by the flood, may not even finish:
  // how many 401 is left open).
  INFO("401: " << answered_401 << ", 503: " << answered_503_retry << ", evicted "
               << during.connections_evicted << ", skipped checks "
               << during.credential_checks_skipped);
  CHECK(answered_503_retry > 0);
  CHECK(answered_other == 0);
  CHECK(during.credential_checks_refused >= 64);
}

TEST_CASE(
    "a connection waiting for its credential check is evicted at the limit, its check "
    "skipped") {
  TempDir dir;
  // victim's hash has cost 14: a check of it takes about a second or more.
  PrometheusEndpointOptions options = options_with(
      dir.write("web.yml", "basic_auth_users:\n  prometheus: " + bcrypt_hash("right", 4) +
                               "\n  victim: " + slow_unmatchable_hash(14) + "\n"));
  options.max_connections = 2;
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  const std::string right = basic("prometheus", "right");
  REQUIRE(scrape_status(endpoint.port(), right) == 200);
  // That client has closed; until the server has seen it, its connection
  // still counts against the limit and would be evicted first.
  REQUIRE(eventually([&] { return endpoint.figures().connections_open == 0; }));
  const std::string wrong =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: " + basic("victim", "wrong") + "\r\n\r\n";
  Client running(endpoint.port());  // its check runs
  asio::write(running.socket, asio::buffer(wrong));
  REQUIRE(eventually([&] { return endpoint.figures().requests == 2; }));
  Client queued(endpoint.port());  // its check waits behind
  asio::write(queued.socket, asio::buffer(wrong));
  REQUIRE(eventually([&] { return endpoint.figures().requests == 3; }));

  // Both wait for a check: a new connection evicts the one waiting longest.
  Client scraper(endpoint.port());
  const auto first = get_metrics(scraper, right, false);
  REQUIRE(first);
  CHECK(first->result() == http::status::ok);
  CHECK(running.closed_by_server());
  Client another(endpoint.port());
  const auto second = get_metrics(another, right, false);
  REQUIRE(second);
  CHECK(second->result() == http::status::ok);
  CHECK(queued.closed_by_server());
  CHECK(endpoint.figures().connections_evicted == 2);
  CHECK(endpoint.figures().connections_rejected == 0);
  // The queued check is skipped when its turn comes, without bcrypt.
  CHECK(eventually([&] { return endpoint.figures().credential_checks_skipped == 1; }));
}

TEST_CASE("a check whose client closed its connection is skipped without bcrypt") {
  TempDir dir;
  PrometheusEndpointOptions options = options_with(
      dir.write("web.yml", "basic_auth_users:\n  victim: " + slow_unmatchable_hash(14) + "\n"));
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  const std::string wrong =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: " + basic("victim", "wrong") + "\r\n\r\n";
  Client running(endpoint.port());  // its check runs, about a second or more
  asio::write(running.socket, asio::buffer(wrong));
  REQUIRE(eventually([&] { return endpoint.figures().requests == 1; }));
  for (int i = 0; i < 4; ++i) {
    Client gone(endpoint.port());
    asio::write(gone.socket, asio::buffer(wrong));
    REQUIRE(eventually([&] { return endpoint.figures().requests == 2u + i; }));
  }  // each closed right after its request
  const auto answer = [&] {
    http::response<http::string_body> response;
    http::read(running.socket, running.buffer, response);
    return response.result();
  }();
  CHECK(answer == http::status::unauthorized);
  CHECK(eventually([&] { return endpoint.figures().credential_checks_skipped == 4; }));
  CHECK(endpoint.figures().unauthorized == 1);
}

TEST_CASE(
    "requests without valid credentials over the rate limit never make the authorized "
    "scraper get 429") {
  TempDir dir;
  PrometheusEndpointOptions options = options_with(
      dir.write("web.yml", "basic_auth_users:\n  prometheus: " + bcrypt_hash("right", 4) +
                               "\nrate_limit:\n  interval: 1h\n  burst: 5\n"));
  PrometheusEndpoint endpoint(options, [] { return kBody; });
  const std::string right = basic("prometheus", "right");
  CHECK(scrape_status(endpoint.port(), right) == 200);  // a first login: unauthenticated bucket
  int refused_429 = 0;
  for (int i = 0; i < 40; ++i) {
    const std::string credentials = i % 2 == 0 ? "" : basic("prometheus", "wrong");
    const unsigned status = scrape_status(endpoint.port(), credentials);
    CHECK((status == 401 || status == 429));
    refused_429 += status == 429 ? 1 : 0;
  }
  CHECK(refused_429 == 40 - 4);
  // The remembered scraper has a bucket of its own: 5 at once, then limited too.
  for (int i = 0; i < 5; ++i) CHECK(scrape_status(endpoint.port(), right) == 200);
  CHECK(scrape_status(endpoint.port(), right) == 429);
  CHECK(endpoint.figures().rate_limited == 40 - 4 + 1);
}

TEST_CASE("plain HTTP sent to the TLS port is answered 400 as Go's server does, then closed") {
  TempDir dir;
  const std::string d = dir.dir.string();
  REQUIRE(std::system(("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                       "-days 1 -subj /CN=test -addext subjectAltName=IP:127.0.0.1 -keyout " +
                       d + "/server.key -out " + d + "/server.crt >/dev/null 2>&1")
                          .c_str()) == 0);
  PrometheusEndpoint endpoint(options_with(dir.write("web.yml",
                                                     "tls_server_config:\n  cert_file: server.crt\n"
                                                     "  key_file: server.key\n")),
                              [] { return kBody; });
  for (const std::string method : {"GET", "HEAD", "POST", "PUT"}) {
    INFO(method);
    Client plain(endpoint.port());
    asio::write(plain.socket, asio::buffer(method + " /metrics HTTP/1.1\r\nHost: x\r\n\r\n"));
    std::string received;
    char chunk[4096];
    beast::error_code ec;
    while (!ec) received.append(chunk, plain.socket.read_some(asio::buffer(chunk), ec));
    CHECK(ec == asio::error::eof);  // closed after the answer, not reset
    CHECK(received ==
          "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n");
  }
  CHECK(endpoint.figures().tls_handshake_failures == 4);
  CHECK(endpoint.figures().requests == 0);
}
