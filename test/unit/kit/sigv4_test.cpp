// sigv4_test.cpp — the kit's AWS Signature V4: the signatures of AWS's own
// SigV4 test suite (aws-sig-v4-test-suite: get-vanilla,
// get-vanilla-query-order-key-case, post-vanilla, get-utf8) and the signing
// key of AWS's documented example; the canonical path, query and headers;
// the headers a signed request carries (a session token among them); the
// credentials from files (read again at every request), the environment and
// a profile of the shared credentials file; the request through the
// HttpClient; the settings' startup checks, which never quote a secret.
// The signatures are checked end to end against an independent signer
// (npm aws4) in test/integration/sigv4_remote_write.py.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/http_exporter.hpp>
#include <tokenspeed/kit/sigv4.hpp>

#include "temp_dir.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace json = tokenspeed::metrics::kit::json;
using tokenspeed::metrics::test::TempDir;

namespace {

// AWS's example credentials, region, service and time of its test suite.
constexpr const char* kKeyId = "AKIDEXAMPLE";
constexpr const char* kSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
constexpr const char* kDate = "20150830T123600Z";

kit::SigV4Credentials example_credentials() {
  kit::SigV4Credentials credentials;
  credentials.access_key_id = kKeyId;
  credentials.secret_access_key = kSecret;
  return credentials;
}

// A request of the test suite: host and x-amz-date, no body.
kit::SigV4Request suite_request(std::string_view method, std::string_view path,
                                std::string_view query = "") {
  kit::SigV4Request request;
  request.method = method;
  request.path = path;
  request.query = query;
  request.headers = {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", kDate}};
  request.payload_hash = kit::sigv4_sha256_hex("");
  return request;
}

std::string suite_signature(const kit::SigV4Request& request) {
  return kit::sigv4_sign(request, kDate, "us-east-1", "service", example_credentials()).signature;
}

// 2015-08-30T12:36:00Z
const auto kExampleTime = std::chrono::system_clock::time_point(std::chrono::seconds(1440938160));

// The value of header name in "Name: value" lines, "" when absent.
std::string header(const std::vector<std::string>& lines, std::string_view name) {
  for (const std::string& line : lines) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ':')
      return line.substr(name.size() + 2);
  }
  return {};
}

kit::SigV4Environment no_environment() {
  kit::SigV4Environment env;
  env.shared_credentials_file = "/nonexistent/credentials";
  return env;
}

}  // namespace

TEST_CASE("AWS's SigV4 test suite: get-vanilla, its canonical request and string to sign") {
  const kit::SigV4Signature signature = kit::sigv4_sign(
      suite_request("GET", "/"), kDate, "us-east-1", "service", example_credentials());
  CHECK(signature.canonical_request ==
        "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
        "host;x-amz-date\n"
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(signature.string_to_sign ==
        "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
        "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63");
  CHECK(signature.authorization ==
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=host;x-amz-date, "
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST_CASE("AWS's SigV4 test suite: query order, post-vanilla and a UTF-8 path") {
  CHECK(suite_signature(suite_request("GET", "/", "Param2=value2&Param1=value1")) ==
        "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
  CHECK(suite_signature(suite_request("POST", "/")) ==
        "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
  CHECK(suite_signature(suite_request("GET", "/\xe1\x88\xb4")) ==
        "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
}

TEST_CASE("the signing key of AWS's documented example (IAM, 20150830, us-east-1)") {
  const std::string key = kit::sigv4_signing_key(kSecret, "20150830", "us-east-1", "iam");
  CHECK(kit::detail::to_hex(reinterpret_cast<const unsigned char*>(key.data()), key.size()) ==
        "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
}

TEST_CASE("the canonical path encodes the sent path again and resolves dot segments") {
  CHECK(kit::sigv4_canonical_path("") == "/");
  CHECK(kit::sigv4_canonical_path("/workspaces/ws-1/api/v1/remote_write") ==
        "/workspaces/ws-1/api/v1/remote_write");
  CHECK(kit::sigv4_canonical_path("/a%20b/c:d") == "/a%2520b/c%3Ad");
  CHECK(kit::sigv4_canonical_path("//a/./b/../c/") == "/a/c/");
}

TEST_CASE("the canonical query is decoded, encoded again and sorted by name then value") {
  CHECK(kit::sigv4_canonical_query("") == "");
  CHECK(kit::sigv4_canonical_query("b=2&a=1&A=0") == "A=0&a=1&b=2");
  CHECK(kit::sigv4_canonical_query("x=b&x=a&flag&=dropped") == "flag=&x=a&x=b");
  CHECK(kit::sigv4_canonical_query("k=a%2fb+c&t=%7E") == "k=a%2Fb%20c&t=~");
}

TEST_CASE("headers are signed lower-cased, sorted, values trimmed and repeated ones joined") {
  kit::SigV4Request request = suite_request("POST", "/");
  request.headers.emplace_back("Content-Type", "  application/x-protobuf ");
  request.headers.emplace_back("X-Multi", "a   b");
  request.headers.emplace_back("x-multi", "c");
  const kit::SigV4Signature signature =
      kit::sigv4_sign(request, kDate, "us-east-1", "service", example_credentials());
  CHECK(signature.signed_headers == "content-type;host;x-amz-date;x-multi");
  CHECK(signature.canonical_request.find("\ncontent-type:application/x-protobuf\n") !=
        std::string::npos);
  CHECK(signature.canonical_request.find("\nx-multi:a b,c\n") != std::string::npos);
}

TEST_CASE("a signed request carries host, date, payload hash, token and Authorization") {
  const TempDir dir("tsm-kit-sigv4");
  kit::SigV4Options options;
  options.region = "eu-west-1";
  options.access_key_id_file = dir.write("id", "AKIDTEST\n");
  options.secret_access_key_file = dir.write("secret", "s3cr3t-key\n");
  options.session_token_file = dir.write("token", "t0ken-value\n");
  const kit::SigV4Signer signer(options, no_environment());
  CHECK(signer.source() == kit::SigV4Signer::Source::kFiles);
  std::vector<std::string> headers = {"Content-Encoding: snappy",
                                      "Content-Type: application/x-protobuf", "User-Agent: x",
                                      "Expect:"};
  REQUIRE(signer.sign("POST",
                      "https://aps-workspaces.eu-west-1.amazonaws.com:443/workspaces/"
                      "ws-1/api/v1/remote_write",
                      "body", headers, kExampleTime) == "");
  CHECK(header(headers, "Host") == "aps-workspaces.eu-west-1.amazonaws.com");
  CHECK(header(headers, "X-Amz-Date") == kDate);
  CHECK(header(headers, "X-Amz-Content-Sha256") == kit::sigv4_sha256_hex("body"));
  CHECK(header(headers, "X-Amz-Security-Token") == "t0ken-value");
  const std::string authorization = header(headers, "Authorization");
  CHECK(authorization.rfind("AWS4-HMAC-SHA256 Credential=AKIDTEST/20150830/eu-west-1/aps/"
                            "aws4_request, SignedHeaders=content-encoding;content-type;host;"
                            "x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature=",
                            0) == 0);
  CHECK(authorization.find("s3cr3t") == std::string::npos);

  // The same request signed from its parts gives the same signature.
  kit::SigV4Request request;
  request.method = "POST";
  request.path = "/workspaces/ws-1/api/v1/remote_write";
  request.headers = {{"content-encoding", "snappy"},
                     {"content-type", "application/x-protobuf"},
                     {"host", "aps-workspaces.eu-west-1.amazonaws.com"},
                     {"x-amz-content-sha256", kit::sigv4_sha256_hex("body")},
                     {"x-amz-date", kDate},
                     {"x-amz-security-token", "t0ken-value"}};
  request.payload_hash = kit::sigv4_sha256_hex("body");
  kit::SigV4Credentials credentials;
  credentials.access_key_id = "AKIDTEST";
  credentials.secret_access_key = "s3cr3t-key";
  credentials.session_token = "t0ken-value";
  CHECK(authorization ==
        kit::sigv4_sign(request, kDate, "eu-west-1", "aps", credentials).authorization);
}

TEST_CASE("a Host header already there is the one signed; a non-default port is kept") {
  kit::SigV4Environment env = no_environment();
  env.access_key_id = "AKID";
  env.secret_access_key = "secret";
  kit::SigV4Options options;
  options.region = "us-east-1";
  const kit::SigV4Signer signer(options, env);
  CHECK(signer.source() == kit::SigV4Signer::Source::kEnvironment);
  std::vector<std::string> headers;
  REQUIRE(signer.sign("POST", "http://127.0.0.1:9090/api/v1/write?a=1", "", headers) == "");
  CHECK(header(headers, "Host") == "127.0.0.1:9090");
  CHECK(header(headers, "X-Amz-Security-Token").empty());
  headers = {"Host: receiver.internal:8443"};
  REQUIRE(signer.sign("POST", "https://10.0.0.1:8443/w", "", headers) == "");
  CHECK(headers.size() == 4);  // Host, X-Amz-Date, X-Amz-Content-Sha256, Authorization
}

TEST_CASE("credential files are read again at every request, and their failure names the key") {
  const TempDir dir("tsm-kit-sigv4-files");
  kit::SigV4Options options;
  options.region = "us-east-1";
  options.access_key_id_file = dir.write("id", "AKID1");
  options.secret_access_key_file = dir.write("secret", "secret-one");
  const kit::SigV4Signer signer(options, no_environment());
  kit::SigV4Credentials credentials;
  REQUIRE(signer.credentials(credentials) == "");
  CHECK(credentials.access_key_id == "AKID1");
  dir.write("id", "AKID2\n");
  dir.write("secret", "secret-two\n");
  REQUIRE(signer.credentials(credentials) == "");
  CHECK(credentials.access_key_id == "AKID2");
  CHECK(credentials.secret_access_key == "secret-two");
  std::filesystem::remove(dir.path() / "secret");
  std::vector<std::string> headers;
  CHECK(signer.sign("POST", "http://a/w", "", headers) ==
        "'sigv4.secret_access_key_file': cannot read " + (dir.path() / "secret").string() +
            ": No such file or directory");
  CHECK(headers.empty());
}

TEST_CASE("the shared credentials file: its profile, AWS_PROFILE, and what is missing") {
  const TempDir dir("tsm-kit-sigv4-shared");
  const std::string file = dir.write("credentials",
                                     "# comment\n[default]\naws_access_key_id = AKIDDEF\n"
                                     "aws_secret_access_key = secret-default\n\n"
                                     "[ci]\r\naws_access_key_id=AKIDCI\r\n"
                                     "aws_secret_access_key=secret-ci\r\n"
                                     "aws_session_token = token-ci\r\n[broken]\n"
                                     "aws_access_key_id = AKIDB\n");
  kit::SigV4Environment env;
  env.shared_credentials_file = file;
  kit::SigV4Options options;
  options.region = "us-east-1";
  kit::SigV4Credentials credentials;
  REQUIRE(kit::SigV4Signer(options, env).credentials(credentials) == "");
  CHECK(credentials.access_key_id == "AKIDDEF");
  CHECK(credentials.session_token.empty());
  env.profile = "ci";  // AWS_PROFILE
  REQUIRE(kit::SigV4Signer(options, env).credentials(credentials) == "");
  CHECK(credentials.access_key_id == "AKIDCI");
  CHECK(credentials.secret_access_key == "secret-ci");
  CHECK(credentials.session_token == "token-ci");
  options.profile = "broken";  // the setting wins over AWS_PROFILE
  CHECK(kit::SigV4Signer(options, env).check() ==
        file + ": profile 'broken' has no aws_secret_access_key");
  options.profile = "absent";
  CHECK(kit::SigV4Signer(options, env).check() == file + ": no profile 'absent'");
  env.shared_credentials_file = "/nonexistent/credentials";
  CHECK(kit::SigV4Signer(options, env).check().find("cannot read /nonexistent/credentials") !=
        std::string::npos);
}

TEST_CASE("the environment: both keys needed, the token optional") {
  kit::SigV4Environment env = no_environment();
  env.access_key_id = "AKIDENV";
  kit::SigV4Options options;
  options.region = "us-east-1";
  CHECK(kit::SigV4Signer(options, env).check() ==
        "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
  env.secret_access_key = "secret-env";
  env.session_token = "token-env";
  kit::SigV4Credentials credentials;
  REQUIRE(kit::SigV4Signer(options, env).credentials(credentials) == "");
  CHECK(credentials.session_token == "token-env");
}

namespace {

// One request read off a local socket, answered 200.
class OneRequestServer {
 public:
  OneRequestServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t size = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] {
      const int client = ::accept(fd_, nullptr, nullptr);
      char buffer[4096];
      while (received.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        received.append(buffer, static_cast<std::size_t>(n));
      }
      const std::string ok = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::write(client, ok.data(), ok.size());
      ::close(client);
    });
  }
  ~OneRequestServer() {
    join();
    ::close(fd_);
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/api/v1/write"; }
  std::string received;

 private:
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

const kit::SettingsTable& sigv4_table() {
  static const kit::SettingsTable table{{
      kit::http_url_setting("url", R"("http://127.0.0.1:9090/w")", "URL."),
      kit::http_headers_setting("Headers."),
      kit::http_header_files_setting(),
      kit::http_basic_auth_setting(),
      kit::http_bearer_token_file_setting(),
      kit::http_tls_setting(),
      kit::http_sigv4_setting(),
  }};
  return table;
}

std::string refusal(const std::string& config) {
  try {
    kit::check_http_settings(sigv4_table().validate(config), "url");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("the HttpClient sends the signature's headers, signed over what it sends") {
  const TempDir dir("tsm-kit-sigv4-client");
  OneRequestServer server;
  const std::string config = R"({"url": ")" + server.url() +
                             R"(", "headers": {"X-Scope": "t1"}, "sigv4": {"region": "us-east-1",
      "access_key_id_file": ")" +
                             dir.write("id", "AKIDCLIENT") + R"(", "secret_access_key_file": ")" +
                             dir.write("secret", "secret-client") + R"("}})";
  const json::Value settings = sigv4_table().validate(config);
  kit::check_http_settings(settings, "url");
  kit::HttpClient client(kit::http_client_options(kit::Settings(settings), "url"));
  const kit::HttpResponse response =
      client.post("payload", {"Content-Type: application/x-protobuf"},
                  std::chrono::steady_clock::now() + std::chrono::seconds(20));
  server.join();
  CHECK(response.status == 200);
  CHECK(server.received.find("\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIDCLIENT/") !=
        std::string::npos);
  CHECK(server.received.find("SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;"
                             "x-scope, Signature=") != std::string::npos);
  CHECK(server.received.find("\r\nX-Amz-Content-Sha256: " + kit::sigv4_sha256_hex("payload")) !=
        std::string::npos);
  CHECK(server.received.find("secret-client") == std::string::npos);
}

TEST_CASE("sigv4 settings: off without a region, exclusive of other credentials, checked") {
  const TempDir dir("tsm-kit-sigv4-settings");
  const std::string id = dir.write("id", "AKIDSET\n");
  const std::string secret = dir.write("secret", "TOPSECRET\n");
  const std::string files =
      R"("access_key_id_file": ")" + id + R"(", "secret_access_key_file": ")" + secret + "\"";
  CHECK(refusal(R"({"sigv4": {}})") == "accepted");
  CHECK(refusal(R"({"sigv4": {"service": "aps", "region": "eu-west-1", )" + files + "}}") ==
        "accepted");
  CHECK(refusal(R"({"sigv4": {"access_key_id_file": "/x"}})") ==
        "'sigv4.access_key_id_file' needs 'sigv4.region'");
  CHECK(refusal(R"({"sigv4": {"region": "EU west"}})") ==
        "'sigv4.region' must be an AWS region (lower-case letters, digits and '-'), got \"EU "
        "west\"");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", "role_arn": "arn:aws:iam::1:role/r"}})")
            .rfind("'sigv4.role_arn' must be an IAM role's ARN", 0) == 0);
  CHECK(refusal(R"({"bearer_token_file": ")" + secret + R"(", "sigv4": {"region": "eu-west-1", )" +
                files + "}}") ==
        "'sigv4' and 'basic_auth' or 'bearer_token_file' cannot both be set (one Authorization "
        "header)");
  CHECK(refusal(R"({"headers": {"X-Amz-Date": "x"}, "sigv4": {"region": "eu-west-1", )" + files +
                "}}") == "'X-Amz-Date' header beside sigv4, which sets it: remove it");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", "access_key_id_file": ")" + id + "\"}}") ==
        "'sigv4.access_key_id_file' needs 'sigv4.secret_access_key_file'");
  const std::string missing = refusal(R"({"sigv4": {"region": "eu-west-1", )" + files +
                                      R"(, "session_token_file": "/nonexistent/token"}})");
  CHECK(missing ==
        "'sigv4': 'sigv4.session_token_file': cannot read /nonexistent/token: No such file or "
        "directory");
  for (const std::string& line :
       {missing, refusal(R"({"sigv4": {"region": "x", )" + files + R"(, "profile": "p"}})")})
    CHECK(line.find("TOPSECRET") == std::string::npos);
}
