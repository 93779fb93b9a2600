// sts_assume_role_test.cpp — the kit's role assumption through AWS STS:
// the strict reading of STS's XML answers (AWS's documented AssumeRole
// answer, every malformed shape a clear error that quotes no value), the
// Expiration time, the role ARN and session name checks, the AssumeRole form
// body, when credentials are renewed, and AssumeRoleSigner against a local
// scripted STS: the call signed with the base credentials for "sts", the
// requests signed with the temporary ones and their token, the cache, the
// renewal, a refusal or an unreachable STS as the request's error, and the
// deadline kept. The signatures are checked end to end against npm aws4 in
// test/integration/sigv4_signing.py.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <tokenspeed/kit/http_client.hpp>
#include <tokenspeed/kit/http_exporter.hpp>
#include <tokenspeed/kit/sts_assume_role.hpp>
#include <tokenspeed/kit/sts_response.hpp>

#include "temp_dir.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace json = tokenspeed::metrics::kit::json;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;
using SystemTime = std::chrono::system_clock::time_point;
using tokenspeed::metrics::test::TempDir;

namespace {

constexpr const char* kTempKeyId = "ASIAIOSFODNN7EXAMPLE";
constexpr const char* kTempSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEY";
constexpr const char* kTempToken =
    "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQW";

// AWS's documented answer to AssumeRole (the STS API reference), with the
// given Expiration.
std::string assume_role_answer(const std::string& expiration,
                               const std::string& key_id = kTempKeyId) {
  return R"(<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <AssumeRoleResult>
  <SourceIdentity>Alice</SourceIdentity>
    <AssumedRoleUser>
      <Arn>arn:aws:sts::123456789012:assumed-role/demo/TestAR</Arn>
      <AssumedRoleId>ARO123EXAMPLE123:TestAR</AssumedRoleId>
    </AssumedRoleUser>
    <Credentials>
      <AccessKeyId>)" +
         key_id + R"(</AccessKeyId>
      <SecretAccessKey>)" +
         kTempSecret + R"(</SecretAccessKey>
      <SessionToken>)" +
         kTempToken + R"(</SessionToken>
      <Expiration>)" +
         expiration + R"(</Expiration>
    </Credentials>
    <PackedPolicySize>6</PackedPolicySize>
  </AssumeRoleResult>
  <ResponseMetadata>
    <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId>
  </ResponseMetadata>
</AssumeRoleResponse>)";
}

constexpr const char* kAccessDenied =
    R"(<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
  <Error>
    <Type>Sender</Type>
    <Code>AccessDenied</Code>
    <Message>User: arn:aws:iam::123456789012:user/metrics is not authorized to perform: sts:AssumeRole</Message>
  </Error>
  <RequestId>4f5a7e0e-0000-4000-8000-000000000000</RequestId>
</ErrorResponse>)";

SystemTime at(const std::string& iso) {
  SystemTime out;
  REQUIRE(kit::parse_iso8601_utc(iso, out));
  return out;
}

std::string parse_problem(const std::string& xml) {
  kit::StsTemporaryCredentials credentials;
  const std::string problem = kit::parse_assume_role_response(xml, credentials);
  if (!problem.empty()) CHECK(credentials.credentials.secret_access_key.empty());
  return problem;
}

// The answer with the Credentials element's inside replaced.
std::string with_credentials(const std::string& inside) {
  return "<AssumeRoleResponse><AssumeRoleResult><Credentials>" + inside +
         "</Credentials></AssumeRoleResult></AssumeRoleResponse>";
}

std::string http_answer(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: text/xml\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

// A local server answering each connection's one request with the next of
// its scripted answers ("" holds the connection, never answering), keeping
// every request it read (head and body).
class ScriptedServer {
 public:
  explicit ScriptedServer(std::vector<std::string> answers)
      : answers_(answers.begin(), answers.end()) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(fd_, 8) == 0);
    socklen_t size = sizeof address;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &size);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string url(const std::string& path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::vector<std::string> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  void serve() {
    for (;;) {
      const int client = ::accept(fd_, nullptr, nullptr);
      if (client < 0 || stopping_) {
        if (client >= 0) ::close(client);
        return;
      }
      std::string request;
      char buffer[4096];
      std::size_t want = std::string::npos;
      while (want == std::string::npos || request.size() < want) {
        const ssize_t n = ::read(client, buffer, sizeof buffer);
        if (n <= 0) break;
        request.append(buffer, static_cast<std::size_t>(n));
        const std::size_t head = request.find("\r\n\r\n");
        if (want == std::string::npos && head != std::string::npos) {
          const std::size_t length = request.find("Content-Length: ");
          want =
              head + 4 + (length < head ? std::stoul(request.substr(length + 16)) : std::size_t{0});
        }
      }
      std::string answer;
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
        if (!answers_.empty()) {
          answer = answers_.front();
          answers_.pop_front();
        }
      }
      if (answer.empty()) {
        while (::read(client, buffer, sizeof buffer) > 0) {
        }
      } else {
        (void)!::write(client, answer.data(), answer.size());
      }
      ::close(client);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::deque<std::string> answers_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

// The value of header name in "Name: value" lines, "" when absent.
std::string header(const std::vector<std::string>& lines, std::string_view name) {
  for (const std::string& line : lines) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ':')
      return line.substr(name.size() + 2);
  }
  return {};
}

kit::SigV4Environment base_environment() {
  kit::SigV4Environment env;
  env.access_key_id = "AKIDBASE";
  env.secret_access_key = "base-secret-never-shown";
  env.shared_credentials_file = "/nonexistent/credentials";
  return env;
}

kit::SigV4Options receiver_options() {
  kit::SigV4Options options;
  options.region = "eu-west-1";
  return options;  // service aps
}

kit::AssumeRoleOptions role_at(const std::string& endpoint) {
  kit::AssumeRoleOptions role;
  role.role_arn = "arn:aws:iam::123456789012:role/metrics-writer";
  role.sts_endpoint = endpoint;
  return role;
}

Clock::time_point in(seconds s) { return Clock::now() + s; }

}  // namespace

TEST_CASE("AWS's documented AssumeRole answer gives its four credentials' values") {
  kit::StsTemporaryCredentials role;
  REQUIRE(kit::parse_assume_role_response(assume_role_answer("2019-11-09T13:34:41Z"), role) == "");
  CHECK(role.credentials.access_key_id == kTempKeyId);
  CHECK(role.credentials.secret_access_key == kTempSecret);
  CHECK(role.credentials.session_token == kTempToken);
  CHECK(std::chrono::duration_cast<seconds>(role.expiration.time_since_epoch()).count() ==
        1573306481);
  // An XML declaration, comments, entities and a prefix-free single quote.
  REQUIRE(kit::parse_assume_role_response(
              "<?xml version='1.0' encoding='UTF-8'?>\n<!-- a -->" +
                  with_credentials("<AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>a&amp;b&#x2F;"
                                   "&#43;</SecretAccessKey><SessionToken>t<!-- c -->ok"
                                   "</SessionToken><Expiration>2030-01-01T00:00:00.000Z"
                                   "</Expiration>") +
                  "\n",
              role) == "");
  CHECK(role.credentials.secret_access_key == "a&b/+");
  CHECK(role.credentials.session_token == "tok");
  CHECK(role.expiration == at("2030-01-01T00:00:00Z"));
}

TEST_CASE("a malformed AssumeRole answer is a clear error that quotes no value") {
  const std::string key = "<AccessKeyId>ASIA1</AccessKeyId>";
  const std::string secret = "<SecretAccessKey>SECRETVALUE</SecretAccessKey>";
  const std::string token = "<SessionToken>TOKENVALUE</SessionToken>";
  const std::string expiration = "<Expiration>2030-01-01T00:00:00Z</Expiration>";
  CHECK(parse_problem("") == "not XML: no root element at byte 0");
  CHECK(parse_problem("{\"Credentials\": {}}") == "not XML: no root element at byte 0");
  CHECK(parse_problem("<AssumeRoleResponse><AssumeRoleResult>") ==
        "not XML: an unclosed element at byte 38");
  CHECK(parse_problem("<a></b>") ==
        "not XML: an end tag that does not match its start tag at "
        "byte 6");
  CHECK(parse_problem("<a>&nbsp;</a>") == "not XML: an unknown entity at byte 3");
  CHECK(parse_problem("<!DOCTYPE a [<!ENTITY x 'y'>]><a/>") ==
        "not XML: markup other than elements and comments at byte 0");
  CHECK(parse_problem("<a><![CDATA[x]]></a>") ==
        "not XML: markup other than elements and comments at byte 3");
  CHECK(parse_problem("<a/><b/>") == "not XML: text after the root element at byte 4");
  CHECK(parse_problem("<a x=1/>") == "not XML: an unquoted attribute value at byte 5");
  CHECK(parse_problem(kAccessDenied) == "not an <AssumeRoleResponse>");
  CHECK(parse_problem("<AssumeRoleResponse/>") ==
        "not one <AssumeRoleResult> in <AssumeRoleResponse>");
  CHECK(parse_problem(with_credentials(key + secret + expiration)) ==
        "no <SessionToken> in <Credentials>");
  CHECK(parse_problem(with_credentials(key + key + secret + token + expiration)) ==
        "more than one <AccessKeyId> in <Credentials>");
  CHECK(parse_problem(with_credentials(key + "<SecretAccessKey> </SecretAccessKey>" + token +
                                       expiration)) == "an empty <SecretAccessKey>");
  CHECK(parse_problem(with_credentials(key + "<SecretAccessKey>a b</SecretAccessKey>" + token +
                                       expiration)) ==
        "a <SecretAccessKey> with a blank or a byte outside printable ASCII");
  CHECK(parse_problem(
            with_credentials("<AccessKeyId>AS-1</AccessKeyId>" + secret + token + expiration)) ==
        "an <AccessKeyId> that is not letters and digits");
  CHECK(parse_problem(with_credentials(key + secret + token +
                                       "<Expiration>2030-01-01 00:00:00</Expiration>")) ==
        "an <Expiration> that is not a UTC time (YYYY-MM-DDTHH:MM:SSZ)");
  CHECK(parse_problem(with_credentials(key + secret + "<SessionToken><b/></SessionToken>" +
                                       expiration)) == "<SessionToken> holds elements");
  std::string deep;
  for (int i = 0; i < 40; ++i) deep += "<a>";
  CHECK(parse_problem(deep) == "not XML: elements nested too deep at byte 96");
}

TEST_CASE("STS's refusal reads as its code and message") {
  CHECK(kit::sts_error_summary(kAccessDenied) ==
        "AccessDenied: User: arn:aws:iam::123456789012:user/metrics is not authorized to "
        "perform: sts:AssumeRole");
  CHECK(kit::sts_error_summary("<ErrorResponse><Error><Code>Throttling</Code></Error>"
                               "</ErrorResponse>") == "Throttling");
  CHECK(kit::sts_error_summary("<html>Bad gateway</html>") == "");
  CHECK(kit::sts_error_summary("not xml") == "");
}

TEST_CASE("Expiration: ISO 8601 in UTC, a fraction dropped, anything else refused") {
  SystemTime time;
  REQUIRE(kit::parse_iso8601_utc("1970-01-01T00:00:00Z", time));
  CHECK(time.time_since_epoch().count() == 0);
  REQUIRE(kit::parse_iso8601_utc("2024-02-29T23:59:59.5Z", time));
  CHECK(std::chrono::duration_cast<seconds>(time.time_since_epoch()).count() == 1709251199);
  for (const char* bad : {"2023-02-29T00:00:00Z", "2024-13-01T00:00:00Z", "2024-01-01T24:00:00Z",
                          "2024-01-01T00:00:00+01:00", "2024-01-01T00:00:00",
                          "2024-01-01T00:00:00.Z", "2024-1-01T00:00:00Z", "20240101T000000Z", ""})
    CHECK_FALSE(kit::parse_iso8601_utc(bad, time));
}

TEST_CASE("a role ARN, a session name and an external ID in the forms STS takes") {
  for (const char* arn :
       {"arn:aws:iam::123456789012:role/metrics-writer", "arn:aws-cn:iam::123456789012:role/a",
        "arn:aws-us-gov:iam::123456789012:role/team/ops/w+=,.@_-"})
    CHECK(kit::is_role_arn(arn));
  for (const char* arn :
       {"", "metrics-writer", "arn:aws:iam::1234:role/w", "arn:aws:iam::123456789012:user/w",
        "arn:aws:sts::123456789012:role/w", "arn:aws:iam::123456789012:role/",
        "arn:aws:iam::123456789012:role/a b", "arn:aws:iam::123456789012:role//w",
        "arn:aws:iam:eu-west-1:123456789012:role/w", "arn:AWS:iam::123456789012:role/w"})
    CHECK_FALSE(kit::is_role_arn(arn));
  CHECK(kit::is_role_session_name("tokenspeed-metrics"));
  CHECK_FALSE(kit::is_role_session_name("x"));
  CHECK_FALSE(kit::is_role_session_name("a b"));
  CHECK_FALSE(kit::is_role_session_name(std::string(65, 'a')));
  CHECK(kit::is_external_id("urn:partner/abc-123"));
  CHECK_FALSE(kit::is_external_id("a"));
  CHECK(kit::default_sts_endpoint("eu-west-1") == "https://sts.eu-west-1.amazonaws.com/");
  CHECK(kit::default_sts_endpoint("cn-north-1") == "https://sts.cn-north-1.amazonaws.com.cn/");
}

TEST_CASE("the AssumeRole form body: action, version, role, session, duration, external ID") {
  kit::AssumeRoleOptions role = role_at("");
  CHECK(kit::assume_role_request_body(role) ==
        "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2F"
        "metrics-writer&RoleSessionName=tokenspeed-metrics&DurationSeconds=3600");
  role.external_id = "urn:x";
  CHECK(kit::assume_role_request_body(role, seconds(900))
            .find("&DurationSeconds=900&ExternalId=urn%3Ax") != std::string::npos);
}

TEST_CASE("credentials are renewed 5 minutes before they expire, or halfway when shorter") {
  const SystemTime received = at("2030-01-01T00:00:00Z");
  CHECK(kit::assume_role_renewal_time(received, at("2030-01-01T01:00:00Z")) ==
        at("2030-01-01T00:55:00Z"));
  CHECK(kit::assume_role_renewal_time(received, at("2030-01-01T00:10:00Z")) ==
        at("2030-01-01T00:05:00Z"));
  CHECK(kit::assume_role_renewal_time(received, at("2030-01-01T00:00:04Z")) ==
        at("2030-01-01T00:00:02Z"));
}

TEST_CASE("the role is assumed with the base credentials, then its credentials sign, cached") {
  ScriptedServer sts({http_answer(200, assume_role_answer("2030-01-01T01:00:00Z")),
                      http_answer(200, assume_role_answer("2030-01-01T02:00:00Z", "ASIASECOND"))});
  kit::AssumeRoleSigner signer(receiver_options(), role_at(sts.url("/sts")), base_environment());
  const SystemTime start = at("2030-01-01T00:00:00Z");
  std::vector<std::string> headers = {"Content-Type: application/x-protobuf"};
  REQUIRE(signer.sign("POST", "https://aps.example/w", "body", headers, in(seconds(20)), nullptr,
                      start) == "");
  CHECK(header(headers, "Authorization")
            .rfind("AWS4-HMAC-SHA256 Credential=ASIAIOSFODNN7EXAMPLE/20300101/eu-west-1/aps/"
                   "aws4_request, SignedHeaders=content-type;host;x-amz-content-sha256;"
                   "x-amz-date;x-amz-security-token, Signature=",
                   0) == 0);
  CHECK(header(headers, "X-Amz-Security-Token") == kTempToken);

  // The call STS got: a signed form POST of the base key for sts.
  std::vector<std::string> calls = sts.requests();
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].rfind("POST /sts HTTP/1.1\r\n", 0) == 0);
  CHECK(calls[0].find("\r\nContent-Type: application/x-www-form-urlencoded; charset=utf-8\r\n") !=
        std::string::npos);
  // Signed now (the clock's date), the base key's scope for sts.
  CHECK(calls[0].find("\r\nAuthorization: AWS4-HMAC-SHA256 Credential=AKIDBASE/") !=
        std::string::npos);
  CHECK(calls[0].find("/eu-west-1/sts/aws4_request, SignedHeaders=content-type;host;"
                      "x-amz-content-sha256;x-amz-date, Signature=") != std::string::npos);
  CHECK(calls[0].find("X-Amz-Security-Token") == std::string::npos);
  CHECK(calls[0].find("\r\n\r\nAction=AssumeRole&Version=2011-06-15&RoleArn=") !=
        std::string::npos);
  CHECK(calls[0].find("base-secret-never-shown") == std::string::npos);

  // Cached until 5 minutes before Expiration; renewed then.
  headers.clear();
  REQUIRE(signer.sign("POST", "https://aps.example/w", "", headers, in(seconds(20)), nullptr,
                      at("2030-01-01T00:54:59Z")) == "");
  CHECK(sts.requests().size() == 1);
  CHECK(signer.assumed() == 1);
  headers.clear();
  REQUIRE(signer.sign("POST", "https://aps.example/w", "", headers, in(seconds(20)), nullptr,
                      at("2030-01-01T00:55:00Z")) == "");
  CHECK(sts.requests().size() == 2);
  CHECK(signer.assumed() == 2);
  CHECK(header(headers, "Authorization").find("Credential=ASIASECOND/") != std::string::npos);
}

TEST_CASE("a refusal of STS is the request's error, quoting STS and never a secret") {
  ScriptedServer sts({http_answer(403, kAccessDenied), http_answer(200, "<AssumeRoleResponse/>"),
                      http_answer(502, "<html>bad gateway</html>")});
  kit::AssumeRoleSigner signer(receiver_options(), role_at(sts.url()), base_environment());
  std::vector<std::string> headers;
  const std::string prefix =
      "'sigv4.role_arn': STS AssumeRole of "
      "arn:aws:iam::123456789012:role/metrics-writer at " +
      sts.url() + ": ";
  CHECK(signer.sign("POST", "https://aps.example/w", "", headers, in(seconds(20)), nullptr) ==
        prefix +
            "HTTP 403: AccessDenied: User: arn:aws:iam::123456789012:user/metrics is not "
            "authorized to perform: sts:AssumeRole");
  CHECK(signer.sign("POST", "https://aps.example/w", "", headers, in(seconds(20)), nullptr) ==
        prefix + "a malformed answer: not one <AssumeRoleResult> in <AssumeRoleResponse>");
  CHECK(signer.sign("POST", "https://aps.example/w", "", headers, in(seconds(20)), nullptr) ==
        prefix + "HTTP 502: <html>bad gateway</html>");
  CHECK(headers.empty());
  CHECK(signer.assumed() == 0);
}

TEST_CASE("a failed renewal keeps the valid credentials; once expired, the failure is the error") {
  ScriptedServer sts({http_answer(200, assume_role_answer("2030-01-01T00:00:04Z")),
                      http_answer(403, kAccessDenied), http_answer(403, kAccessDenied)});
  kit::AssumeRoleSigner signer(receiver_options(), role_at(sts.url()), base_environment());
  kit::SigV4Credentials credentials;
  REQUIRE(signer.credentials(credentials, in(seconds(20)), nullptr, at("2030-01-01T00:00:00Z")) ==
          "");
  // Renewal is due at half life (2 s): refused, the cached ones still serve.
  REQUIRE(signer.credentials(credentials, in(seconds(20)), nullptr, at("2030-01-01T00:00:03Z")) ==
          "");
  CHECK(credentials.access_key_id == kTempKeyId);
  CHECK(signer.credentials(credentials, in(seconds(20)), nullptr, at("2030-01-01T00:00:04Z"))
            .find("HTTP 403: AccessDenied") != std::string::npos);
  CHECK(credentials.access_key_id.empty());
  CHECK(sts.requests().size() == 3);
}

TEST_CASE("credentials STS gives already expired are an error (the clock is wrong)") {
  ScriptedServer sts({http_answer(200, assume_role_answer("2020-01-01T00:00:00Z"))});
  kit::AssumeRoleSigner signer(receiver_options(), role_at(sts.url()), base_environment());
  kit::SigV4Credentials credentials;
  CHECK(signer.credentials(credentials, in(seconds(20)), nullptr, at("2030-01-01T00:00:00Z"))
            .find("its answer's credentials have expired already") != std::string::npos);
}

TEST_CASE("an STS that never answers ends by the deadline; the stop flag ends it at once") {
  ScriptedServer sts({"", ""});
  kit::AssumeRoleSigner signer(receiver_options(), role_at(sts.url()), base_environment());
  kit::SigV4Credentials credentials;
  auto started = Clock::now();
  const std::string timed_out =
      signer.credentials(credentials, Clock::now() + std::chrono::milliseconds(300), nullptr,
                         std::chrono::system_clock::now());
  CHECK(kit::detail::lower(timed_out).find("timeout") != std::string::npos);
  CHECK(Clock::now() - started < seconds(5));
  std::atomic<bool> stop{true};
  started = Clock::now();
  CHECK(signer.credentials(credentials, in(seconds(60)), &stop, std::chrono::system_clock::now())
            .find("interrupted by close") != std::string::npos);
  CHECK(Clock::now() - started < seconds(5));
}

TEST_CASE("an STS out of reach, or base credentials missing, is the request's error") {
  int port = 0;
  {
    ScriptedServer closed({});
    port = std::stoi(closed.url().substr(17));
  }
  kit::AssumeRoleSigner unreachable(receiver_options(),
                                    role_at("http://127.0.0.1:" + std::to_string(port) + "/"),
                                    base_environment());
  kit::SigV4Credentials credentials;
  CHECK(unreachable
            .credentials(credentials, in(seconds(20)), nullptr, std::chrono::system_clock::now())
            .find("Couldn't connect to server") != std::string::npos);
  ScriptedServer sts({});
  kit::SigV4Options files = receiver_options();
  files.access_key_id_file = "/nonexistent/id";
  files.secret_access_key_file = "/nonexistent/secret";
  kit::AssumeRoleSigner no_base(files, role_at(sts.url()), base_environment());
  CHECK(no_base.credentials(credentials, in(seconds(20)), nullptr,
                            std::chrono::system_clock::now()) ==
        "'sigv4.role_arn': STS AssumeRole of arn:aws:iam::123456789012:role/metrics-writer at " +
            sts.url() +
            ": 'sigv4.access_key_id_file': cannot read /nonexistent/id: No such file or "
            "directory");
  CHECK(sts.requests().empty());
}

namespace {

const kit::SettingsTable& role_table() {
  static const kit::SettingsTable table{{
      kit::http_url_setting("url", R"("http://127.0.0.1:9090/w")", "URL."),
      kit::http_headers_setting("Headers."),
      kit::http_tls_setting(),
      kit::http_sigv4_setting(),
  }};
  return table;
}

std::string refusal(const std::string& config) {
  try {
    kit::check_http_settings(role_table().validate(config), "url");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("role settings: an ARN, the other keys only with it, checked at startup") {
  const TempDir dir("tsm-kit-sts-settings");
  const std::string files = R"("access_key_id_file": ")" + dir.write("id", "AKIDSET") +
                            R"(", "secret_access_key_file": ")" + dir.write("secret", "TOPSECRET") +
                            "\"";
  const std::string arn = R"("role_arn": "arn:aws:iam::123456789012:role/w")";
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files + ", " + arn + "}}") == "accepted");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files + ", " + arn +
                R"(, "role_session_name": "node-7", "external_id": "urn:x/1",
                   "sts_endpoint": "https://vpce-1.sts.eu-west-1.vpce.amazonaws.com/"}})") ==
        "accepted");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files +
                R"(, "role_arn": "metrics-writer"}})") ==
        "'sigv4.role_arn' must be an IAM role's ARN (arn:aws:iam::<12-digit account>:role/<name>), "
        "got \"metrics-writer\"");
  CHECK(refusal(R"({"sigv4": {)" + arn + "}}") == "'sigv4.role_arn' needs 'sigv4.region'");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files +
                R"(, "external_id": "urn:x"}})") == "'sigv4.external_id' needs 'sigv4.role_arn'");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files +
                R"(, "role_session_name": "other"}})") ==
        "'sigv4.role_session_name' needs 'sigv4.role_arn'");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files + ", " + arn +
                R"(, "role_session_name": "a b"}})") ==
        "'sigv4.role_session_name' must be 2 to 64 of letters, digits and +=,.@_-, got \"a b\"");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files + ", " + arn +
                R"(, "external_id": "SECRET ID"}})") ==
        "'sigv4.external_id' must be 2 to 1224 of letters, digits and +=,.@:/_-");
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + files + ", " + arn +
                R"(, "sts_endpoint": "sts.eu-west-1.amazonaws.com"}})") ==
        "'sigv4.sts_endpoint' must start with http:// or https://, got "
        "\"sts.eu-west-1.amazonaws.com\"");
  // The base credentials must be there now, though STS is only called later.
  CHECK(refusal(R"({"sigv4": {"region": "eu-west-1", )" + arn +
                R"(, "access_key_id_file": "/nonexistent/id", "secret_access_key_file": ")" +
                dir.path().string() + "/secret\"}}") ==
        "'sigv4': 'sigv4.access_key_id_file': cannot read /nonexistent/id: No such file or "
        "directory");
}

TEST_CASE("the HttpClient of role settings assumes the role, then sends the role's signature") {
  const TempDir dir("tsm-kit-sts-client");
  ScriptedServer server(
      {http_answer(200, assume_role_answer("2099-01-01T00:00:00Z")), http_answer(200, "")});
  const std::string config =
      R"({"url": ")" + server.url("/api/v1/write") + R"(", "sigv4": {"region": "us-east-1",
      "access_key_id_file": ")" +
      dir.write("id", "AKIDCLIENT") + R"(", "secret_access_key_file": ")" +
      dir.write("secret", "secret-client") +
      R"(", "role_arn": "arn:aws:iam::123456789012:role/w", "sts_endpoint": ")" +
      server.url("/sts/") + R"("}})";
  const json::Value settings = role_table().validate(config);
  kit::check_http_settings(settings, "url");
  kit::HttpClient client(kit::http_client_options(kit::Settings(settings), "url"));
  const kit::HttpResponse response =
      client.post("payload", {"Content-Type: application/x-protobuf"}, in(seconds(20)));
  CHECK(response.error == "");
  CHECK(response.status == 200);
  const std::vector<std::string> requests = server.requests();
  REQUIRE(requests.size() == 2);
  CHECK(requests[0].rfind("POST /sts/ HTTP/1.1\r\n", 0) == 0);
  CHECK(requests[0].find("Credential=AKIDCLIENT/") != std::string::npos);
  CHECK(requests[1].rfind("POST /api/v1/write HTTP/1.1\r\n", 0) == 0);
  CHECK(requests[1].find("Credential=ASIAIOSFODNN7EXAMPLE/") != std::string::npos);
  CHECK(requests[1].find(std::string("\r\nX-Amz-Security-Token: ") + kTempToken + "\r\n") !=
        std::string::npos);
  for (const std::string& request : requests) {
    CHECK(request.find("secret-client") == std::string::npos);
    CHECK(request.find(kTempSecret) == std::string::npos);
  }
}
