// http_client_test.cpp — the kit's libcurl helper against a local socket:
// status and Retry-After read, a deadline ends a request nobody answers, a
// stop flag ends it at once, a refused connection is an error; credentials
// read from their files at every request, and a file that cannot be read
// fails the request before it is sent, naming the setting, not the secret.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include <tokenspeed/kit/gzip.hpp>
#include <tokenspeed/kit/http_client.hpp>

#include "eventually.hpp"
#include "temp_dir.hpp"

namespace kit = tokenspeed::metrics::kit;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using tokenspeed::metrics::test::eventually;

namespace {

// A listening socket on 127.0.0.1 that answers at most once (or never).
class LocalServer {
 public:
  LocalServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t size = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
  }
  ~LocalServer() {
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1/metrics"; }

  // Accepts one connection, reads the request head and body, answers response.
  void answer_once(const std::string& response) {
    thread_ = std::thread([this, response] {
      const int client = ::accept(fd_, nullptr, nullptr);
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
      }
      received = request;
      (void)!::write(client, response.data(), response.size());
      ::close(client);
    });
  }

  // Accepts one connection and reads from it until the client closes it,
  // never answering; has_request turns true once the request head arrived.
  void hold_once() {
    thread_ = std::thread([this] {
      const int client = ::accept(fd_, nullptr, nullptr);
      std::string request;
      char buffer[4096];
      for (;;) {
        const ssize_t n = ::read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
        if (request.find("\r\n\r\n") != std::string::npos) has_request = true;
      }
      ::close(client);
    });
  }

  // Waits for the answer given.
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  std::string received;
  std::atomic<bool> has_request{false};

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace

TEST_CASE("a response's status, Retry-After and body are read") {
  LocalServer server;
  server.answer_once(
      "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nContent-Type: text/plain\r\n"
      "Content-Length: 4\r\nConnection: close\r\n\r\nbusy");
  kit::HttpClient client;
  kit::HttpRequest request;
  const std::string url = server.url();
  request.url = url;
  request.body = "payload";
  request.headers = {"Content-Type: application/x-protobuf", "Expect:"};
  const kit::HttpResponse response = client.post(request, Clock::now() + std::chrono::seconds(20));
  CHECK(response.error == "");
  CHECK(response.status == 503);
  CHECK(response.retry_after == std::optional<std::string>("7"));
  CHECK(response.content_type == "text/plain");
  CHECK(response.body == "busy");
}

TEST_CASE("a gRPC answer's grpc-status, grpc-message and details are read from its trailers") {
  LocalServer server;
  server.answer_once(std::string(
      "HTTP/1.1 200 OK\r\nContent-Type: application/grpc\r\nTransfer-Encoding: chunked\r\n"
      "Connection: close\r\n\r\n5\r\n\0\0\0\0\0\r\n0\r\ngrpc-status: 14\r\n"
      "grpc-message: try%20later\r\ngrpc-status-details-bin: CAg\r\n\r\n",
      187));
  kit::HttpClient client;
  kit::HttpRequest request;
  const std::string url = server.url();
  request.url = url;
  const std::string empty_message(5, '\0');  // the request's view needs it alive
  request.body = empty_message;
  request.headers = {"content-type: application/grpc", "te: trailers", "Expect:"};
  const kit::HttpResponse response = client.post(request, Clock::now() + std::chrono::seconds(20));
  CHECK(response.error == "");
  CHECK(response.status == 200);
  CHECK(response.body == std::string(5, '\0'));
  CHECK(response.grpc_status == std::optional<std::string>("14"));
  CHECK(response.grpc_message == "try%20later");
  CHECK(response.grpc_status_details == "CAg");
}

TEST_CASE("a server that never answers: the deadline ends the request") {
  LocalServer server;  // listens, never accepts: the connection waits in the backlog
  kit::HttpClient client;
  kit::HttpRequest request;
  const std::string url = server.url();
  request.url = url;
  const kit::HttpResponse response = client.post(request, Clock::now() + milliseconds(100));
  CHECK(response.status == 0);
  CHECK(response.timed_out);
}

TEST_CASE("a stop flag ends a request in flight") {
  LocalServer server;
  server.hold_once();
  kit::HttpClient client;
  kit::HttpRequest request;
  const std::string url = server.url();
  request.url = url;
  std::atomic<bool> stop{false};
  std::atomic<bool> stopped_in_flight{false};
  std::thread stopper([&] {
    // Stop only once the server has the request: the request is in flight.
    stopped_in_flight = eventually([&] { return server.has_request.load(); });
    stop = true;
    client.interrupt();
  });
  const kit::HttpResponse response =
      client.post(request, Clock::now() + std::chrono::hours(1), &stop);
  stopper.join();
  REQUIRE(stopped_in_flight);
  CHECK(response.stopped);
  CHECK(response.status == 0);
}

TEST_CASE("a refused connection is an error without a status") {
  int port = 0;
  {
    LocalServer closed;  // bound, then closed: nothing listens on its port
    port = std::stoi(closed.url().substr(17, 5));
  }
  kit::HttpClient client;
  kit::HttpRequest request;
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/v1/metrics";
  request.url = url;
  const kit::HttpResponse response = client.post(request, Clock::now() + std::chrono::seconds(20));
  CHECK(response.status == 0);
  CHECK_FALSE(response.error.empty());
  CHECK_FALSE(response.timed_out);
}

TEST_CASE("gzip output inflates back to the input") {
  std::string input;
  for (int i = 0; i < 1000; ++i) input += "tokenspeed:generation_tokens ";
  const std::string compressed = kit::gzip_compress(input);
  CHECK(compressed.size() < input.size() / 10);
  CHECK(static_cast<unsigned char>(compressed[0]) == 0x1f);  // gzip magic
  CHECK(static_cast<unsigned char>(compressed[1]) == 0x8b);
  z_stream stream{};
  REQUIRE(inflateInit2(&stream, 15 + 16) == Z_OK);
  std::string output(input.size(), '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  stream.avail_in = static_cast<uInt>(compressed.size());
  stream.next_out = reinterpret_cast<Bytef*>(output.data());
  stream.avail_out = static_cast<uInt>(output.size());
  CHECK(inflate(&stream, Z_FINISH) == Z_STREAM_END);
  inflateEnd(&stream);
  CHECK(output == input);
}

TEST_CASE("a credential file loses its trailing line breaks and nothing else") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-credential");
  std::string out;
  CHECK(kit::read_credential_file(dir.write("a", "  tok en \r\n\n"), out) == "");
  CHECK(out == "  tok en ");
  CHECK(kit::read_credential_file(dir.write("b", "tok"), out) == "");
  CHECK(out == "tok");
  CHECK_FALSE(kit::read_credential_file(dir.write("c", "a\nb"), out).empty());
  CHECK(out.empty());
}

TEST_CASE("credentials are read from their files at every request") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-credentials");
  LocalServer server;
  kit::HttpClientOptions options;
  options.url = server.url();
  options.basic_auth_username = "user";
  options.basic_auth_password_file = dir.write("password", "pass\n");
  options.header_files = {{"X-Api-Key", dir.write("key", "k1\n")}};
  kit::HttpClient client(options);
  const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
  server.answer_once(ok);
  CHECK(client.post("b", {}, Clock::now() + std::chrono::seconds(20)).status == 200);
  server.join();
  CHECK(server.received.find("\r\nAuthorization: Basic dXNlcjpwYXNz\r\n") != std::string::npos);
  CHECK(server.received.find("\r\nX-Api-Key: k1\r\n") != std::string::npos);

  dir.write("key", "k2");  // rotated
  server.answer_once(ok);
  CHECK(client.post("b", {}, Clock::now() + std::chrono::seconds(20)).status == 200);
  server.join();
  CHECK(server.received.find("\r\nX-Api-Key: k2\r\n") != std::string::npos);
}

TEST_CASE("a bearer token file is sent as Authorization: Bearer") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-bearer");
  LocalServer server;
  kit::HttpClientOptions options;
  options.url = server.url();
  options.bearer_token_file = dir.write("token", "t0ken\n");
  kit::HttpClient client(options);
  server.answer_once("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  CHECK(client.post("b", {}, Clock::now() + std::chrono::seconds(20)).status == 401);
  server.join();
  CHECK(server.received.find("\r\nAuthorization: Bearer t0ken\r\n") != std::string::npos);
}

TEST_CASE("a credential file that cannot be read fails the request before it is sent") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-unreadable");
  LocalServer server;  // listens, never accepts: a request sent would time out
  kit::HttpClientOptions options;
  options.url = server.url();
  options.basic_auth_username = "user";
  options.basic_auth_password_file = (dir.path() / "gone").string();
  kit::HttpClient client(options);
  const kit::HttpResponse response = client.post("b", {}, Clock::now() + milliseconds(5000));
  CHECK(response.status == 0);
  CHECK_FALSE(response.timed_out);
  CHECK(response.error == "'basic_auth.password_file': cannot read " +
                              options.basic_auth_password_file + ": No such file or directory");

  options.basic_auth_password_file.clear();
  options.header_files = {{"X-Api-Key", dir.write("key", "s3cret\nsecond line")}};
  kit::HttpClient headers(options);
  const kit::HttpResponse refused = headers.post("b", {}, Clock::now() + milliseconds(5000));
  CHECK(refused.status == 0);
  CHECK(refused.error.rfind("'header_files': 'X-Api-Key': ", 0) == 0);
  CHECK(refused.error.find("s3cret") == std::string::npos);
}
