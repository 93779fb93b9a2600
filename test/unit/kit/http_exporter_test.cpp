// http_exporter_test.cpp — the settings every HTTP exporter shares (URL and
// header checks with their messages, also for a table that declares them as
// plain strings, the TLS and credential rows and their checks, the client
// options they make). The exporter itself runs against real
// receivers in test/integration (otlp, remote_write).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <tokenspeed/kit/http_exporter.hpp>

#include "temp_dir.hpp"

namespace kit = tokenspeed::metrics::kit;
namespace json = tokenspeed::metrics::kit::json;

namespace {

json::Value settings(const std::string& url, const std::string& headers = "{}") {
  return json::parse(R"({"url": ")" + url + R"(", "headers": )" + headers +
                     R"(, "initial_backoff_ms": 10, "max_backoff_ms": 5})");
}

}  // namespace

// The settings of a table whose url and headers rows are still plain
// kString and kStringMap rows: check_http_settings holds them to the rules
// of kUrl and kHeaderMap all the same.
TEST_CASE("the URL must be an http or https URL, named by its key, without user information") {
  CHECK_NOTHROW(kit::check_http_settings(settings("https://example.com/x"), "url"));
  CHECK_THROWS_WITH(kit::check_http_settings(settings("ftp://example.com"), "url"),
                    "'url' must start with http:// or https://, got \"ftp://example.com\"");
  CHECK_THROWS_WITH(kit::check_http_settings(settings("http://a:99999/w"), "url"),
                    "'url' must have a port from 1 to 65535, got \"http://a:99999/w\"");
  CHECK_THROWS_WITH(kit::check_http_settings(settings("http://u:pw@a/w"), "url"),
                    "'url' must not hold a user name or password (user:password@); set them "
                    "with basic_auth");
}

TEST_CASE("a header name is a token, a value holds no line break, named never quoted") {
  CHECK_NOTHROW(kit::check_http_settings(settings("http://a", R"({"api-key": "x y"})"), "url"));
  CHECK_THROWS_WITH(kit::check_http_settings(settings("http://a", R"({"a b": "x"})"), "url"),
                    Catch::StartsWith("'headers': 'a b' is not a valid header name"));
  CHECK_THROWS_WITH(kit::check_http_settings(settings("http://a", R"({"a": "x\ny"})"), "url"),
                    "'headers': 'a' must not hold a line break, NUL or another control "
                    "character (but tab) in its value");
}

TEST_CASE("the backoff check and the client options of the settings") {
  CHECK_THROWS_WITH(kit::check_backoff_settings(settings("http://a")),
                    "'max_backoff_ms' must be at least 'initial_backoff_ms'");
  const kit::Settings typed(settings("http://a/b", R"({"A": "1", "B": "2"})"));
  const kit::HttpClientOptions options = kit::http_client_options(typed, "url");
  CHECK(options.url == "http://a/b");
  CHECK(options.headers == std::vector<std::string>{"A: 1", "B: 2"});
}

namespace {

// The rows as an exporter lists them.
const kit::SettingsTable& exporter_table() {
  static const kit::SettingsTable table{{
      kit::http_url_setting("url", R"("http://127.0.0.1:9090/w")", "URL."),
      kit::http_headers_setting("Headers."),
      kit::http_header_files_setting(),
      kit::http_basic_auth_setting(),
      kit::http_bearer_token_file_setting(),
      kit::http_tls_setting(),
  }};
  return table;
}

// The one-line error of config, or "accepted".
std::string refusal(const std::string& config) {
  try {
    kit::check_http_settings(exporter_table().validate(config), "url");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

// The one-line error of config with check_grpc_settings, or "accepted".
std::string grpc_refusal(const std::string& config) {
  try {
    kit::check_grpc_settings(exporter_table().validate(config), "url");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("the headers are described as secret, tls and basic_auth as objects with fields") {
  const json::Value rows = json::parse(exporter_table().describe());
  CHECK(rows.as_array()[0].at("type").as_string() == "url");
  CHECK(rows.as_array()[1].at("type").as_string() == "object of headers");
  CHECK(rows.as_array()[1].at("secret").as_bool());
  CHECK(rows.as_array()[2].at("type").as_string() == "object of headers");
  CHECK(rows.as_array()[2].find("secret") == nullptr);
  const json::Value& tls = rows.as_array()[5];
  CHECK(tls.at("type").as_string() == "object");
  std::string keys;
  for (const json::Value& field : tls.at("fields").as_array())
    keys += field.at("key").as_string() + " ";
  CHECK(keys == "ca_file cert_file key_file server_name insecure_skip_verify min_version ");
  CHECK(json::serialize(tls.at("fields").as_array()[5].at("choices")) ==
        R"(["TLS10","TLS11","TLS12","TLS13"])");
  CHECK(rows.as_array()[3].at("fields").as_array().size() == 2);
}

TEST_CASE("TLS settings with an http:// URL are refused, naming the key") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-tls");
  const std::string cert = dir.write("c.pem", "cert");
  CHECK(refusal(R"({"tls": {"cert_file": ")" + cert + R"(", "key_file": ")" + cert + R"("}})") ==
        "'tls.cert_file' needs an https:// URL, and 'url' is http://127.0.0.1:9090/w");
  CHECK(refusal(R"({"tls": {"insecure_skip_verify": true}})") ==
        "'tls.insecure_skip_verify' needs an https:// URL, and 'url' is http://127.0.0.1:9090/w");
  CHECK(refusal(R"({"tls": {"min_version": "TLS13"}})").rfind("'tls.min_version' needs", 0) == 0);
  CHECK(refusal(R"({"tls": {"cert_fil": "x"}})") ==
        "unknown key 'tls.cert_fil'; allowed keys: ca_file, cert_file, key_file, server_name, "
        "insecure_skip_verify, min_version");
  CHECK(refusal(R"({"url": "https://a", "tls": {"cert_file": ")" + cert + R"("}})") ==
        "'tls.cert_file' needs 'tls.key_file'");
  CHECK(refusal(R"({"url": "https://a", "tls": {"ca_file": "/nonexistent/ca.pem"}})") ==
        "'tls.ca_file': cannot read /nonexistent/ca.pem: No such file or directory");
  CHECK(refusal(R"({"url": "https://a", "tls": {"server_name": "a:1"}})") ==
        "'tls.server_name' must be a host name, got \"a:1\"");
  CHECK(refusal(R"({"url": "https://a", "tls": {"cert_file": ")" + cert + R"(", "key_file": ")" +
                cert + R"(", "server_name": "b", "min_version": "TLS13"}})") == "accepted");
}

TEST_CASE("credential files are checked at startup, naming key and path, never the content") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-credentials");
  const std::string good = dir.write("good", "TOPSECRET\n");
  const std::string empty = dir.write("empty", "\n");
  const std::string broken = dir.write("broken", "TOPSECRET\nmore\n");
  const std::string big = dir.write("big", std::string(kit::kMaxCredentialFileBytes + 1, 'x'));
  const auto basic = [](const std::string& path) {
    return R"({"basic_auth": {"username": "u", "password_file": ")" + path + R"("}})";
  };
  CHECK(refusal(basic(good)) == "accepted");
  CHECK(refusal(basic("/nonexistent/pw")) ==
        "'basic_auth.password_file': cannot read /nonexistent/pw: No such file or directory");
  CHECK(refusal(basic(empty)) == "'basic_auth.password_file': " + empty + " is empty");
  CHECK(refusal(basic(big)) ==
        "'basic_auth.password_file': " + big + " is larger than 65536 bytes");
  CHECK(refusal(basic(dir.str())) ==
        "'basic_auth.password_file': " + dir.str() + " is not a regular file");
  const std::string line_break = refusal(basic(broken));
  CHECK(line_break == "'basic_auth.password_file': " + broken + " has a line break before its end");
  CHECK(line_break.find("TOPSECRET") == std::string::npos);
  CHECK(refusal(R"({"bearer_token_file": "/nonexistent/t"})") ==
        "'bearer_token_file': cannot read /nonexistent/t: No such file or directory");
  CHECK(refusal(R"({"header_files": {"X-Key": "/nonexistent/k"}})") ==
        "'header_files': 'X-Key': cannot read /nonexistent/k: No such file or directory");
  CHECK(refusal(R"({"header_files": {"X Key": ")" + good + R"("}})")
            .rfind("'header_files': 'X Key' is not a valid header name", 0) == 0);
}

TEST_CASE("one Authorization: basic_auth, a bearer token or a header, never two") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-authorization");
  const std::string file = dir.write("f", "x");
  const std::string basic = R"("basic_auth": {"username": "u", "password_file": ")" + file + "\"}";
  CHECK(refusal("{" + basic + R"(, "bearer_token_file": ")" + file + "\"}") ==
        "'basic_auth' and 'bearer_token_file' cannot both be set (one Authorization header)");
  CHECK(refusal(R"({"basic_auth": {"username": "u"}})") ==
        "'basic_auth.username' needs 'basic_auth.password_file'");
  CHECK(refusal(R"({"basic_auth": {"password_file": ")" + file + "\"}}") ==
        "'basic_auth.password_file' needs 'basic_auth.username'");
  CHECK(refusal(R"({"bearer_token_file": ")" + file +
                R"(", "headers": {"authorization": "Bearer k"}})") ==
        "'authorization' header beside basic_auth or bearer_token_file: keep one");
  const std::string both =
      refusal(R"({"headers": {"X-Key": "s3cr3t"}, "header_files": {"x-key": ")" + file + "\"}}");
  CHECK(both == "'header_files': 'x-key' is also in 'headers'");
}

TEST_CASE("the client options carry the TLS and credential settings") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-options");
  const std::string file = dir.write("f", "x");
  const kit::Settings typed = exporter_table().read(
      R"({"url": "https://a/w", "headers": {"A": "1"}, "header_files": {"B": ")" + file +
      R"("}, "bearer_token_file": ")" + file + R"(", "tls": {"ca_file": ")" + file +
      R"(", "cert_file": "c", "key_file": "k", "server_name": "s", "insecure_skip_verify": true,)"
      R"( "min_version": "TLS13"}})");
  const kit::HttpClientOptions options = kit::http_client_options(typed, "url");
  CHECK(options.headers == std::vector<std::string>{"A: 1"});
  CHECK(options.header_files == std::vector<std::pair<std::string, std::string>>{{"B", file}});
  CHECK(options.bearer_token_file == file);
  CHECK(options.basic_auth_password_file.empty());
  CHECK(options.tls.ca_file == file);
  CHECK(options.tls.cert_file == "c");
  CHECK(options.tls.key_file == "k");
  CHECK(options.tls.server_name == "s");
  CHECK(options.tls.insecure_skip_verify);
  CHECK(options.tls.min_version == kit::TlsVersion::kTls13);
}

TEST_CASE("the table's url and header rows are checked by validate, before the cross checks") {
  CHECK(refusal(R"({"url": "https://user:s3cr3t@example.com/w"})") ==
        "'url' must not hold a user name or password (user:password@); set them with basic_auth");
  CHECK(refusal(R"({"url": "https://example.com:0/w"})") ==
        R"('url' must have a port from 1 to 65535, got "https://example.com:0/w")");
  const std::string injected = refusal(R"({"headers": {"X-Key": "s3cr3t\r\nHost: evil"}})");
  CHECK(injected ==
        "'headers': 'X-Key' must not hold a line break, NUL or another control character (but "
        "tab) in its value");
  CHECK(injected.find("s3cr3t") == std::string::npos);
  CHECK(refusal(R"({"header_files": {"X:Key": "/run/k"}})")
            .rfind("'header_files': 'X:Key' is not a valid header name", 0) == 0);
  // The https cross check still names the URL the tls settings need.
  CHECK(refusal(R"({"url": "http://[::1]:9090/w", "tls": {"insecure_skip_verify": true}})") ==
        "'tls.insecure_skip_verify' needs an https:// URL, and 'url' is http://[::1]:9090/w");
}

TEST_CASE("a gRPC exporter refuses gRPC's own headers and a non-base64 -bin value, unquoted") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-grpc-headers");
  const std::string file = dir.write("f", "x");
  const std::string url = R"("url": "http://127.0.0.1:4317", )";
  CHECK(grpc_refusal("{" + url + R"("headers": {"api-key": "s3cr3t", "user-agent": "a/1"}})") ==
        "accepted");
  CHECK(grpc_refusal("{" + url + R"("headers": {"Grpc-Timeout": "s3cr3t"}})") ==
        "'headers': 'Grpc-Timeout' is gRPC's own header (the call sends its deadline in it, "
        "from timeout_ms); remove it");
  CHECK(grpc_refusal("{" + url + R"("header_files": {"content-type": ")" + file + "\"}}") ==
        "'header_files': 'content-type' is gRPC's own header (the call sends content-type: "
        "application/grpc); remove it");
  CHECK(grpc_refusal("{" + url + R"("headers": {"trace-bin": "AAEC"}})") == "accepted");
  const std::string binary = grpc_refusal("{" + url + R"("headers": {"trace-bin": "s3cr3t!"}})");
  CHECK(binary ==
        "'headers': 'trace-bin' must hold base64 (gRPC sends a -bin header's value as binary "
        "metadata)");
  CHECK(binary.find("s3cr3t") == std::string::npos);
  // The URL's own checks first, then the gRPC target's.
  CHECK(grpc_refusal(R"({"url": "ftp://c:4317"})").rfind("'url' must start with", 0) == 0);
  CHECK(grpc_refusal(R"({"url": "http://c:4317?k=s3cr3t"})").find("without a query") !=
        std::string::npos);
  // A -bin header's file holds base64 too: checked as it is now, unquoted.
  const std::string not_base64 = dir.write("not-base64", "s3cr3t!");
  const std::string from_file =
      grpc_refusal("{" + url + R"("header_files": {"trace-bin": ")" + not_base64 + "\"}}");
  CHECK(from_file ==
        "'header_files': 'trace-bin' must hold base64 (gRPC sends a -bin header's value as "
        "binary metadata), and its file does not");
  CHECK(from_file.find("s3cr3t") == std::string::npos);
  const std::string base64 = dir.write("base64", "AAEC\n");
  CHECK(grpc_refusal("{" + url + R"("header_files": {"trace-bin": ")" + base64 + "\"}}") ==
        "accepted");
  // Over HTTP: a query passes, and grpc- names are the operator's.
  CHECK(refusal(R"({"url": "http://c:4318/v1/metrics?k=v", "headers": {"grpc-x": "x"}})") ==
        "accepted");
}

TEST_CASE("an HTTP exporter refuses the headers its transport sends itself, unquoted") {
  const tokenspeed::metrics::test::TempDir dir("tsm-kit-http-headers");
  const std::string file = dir.write("f", "s3cr3t");
  CHECK(refusal(R"({"headers": {"User-Agent": "collector/1", "X-Scope-OrgID": "t"}})") ==
        "accepted");
  for (const char* name :
       {"Content-Type", "content-length", "Content-Encoding", "Host", "Connection", "Keep-Alive",
        "Proxy-Connection", "Transfer-Encoding", "Upgrade", "TE", "Trailer", "Expect"}) {
    INFO(name);
    const std::string refused =
        refusal(std::string(R"({"headers": {")") + name + R"(": "s3cr3t"}})");
    CHECK(refused.rfind(
              std::string("'headers': '") + name + "' is the HTTP transport's own header (", 0) ==
          0);
    CHECK(refused.find("s3cr3t") == std::string::npos);
    CHECK(refusal(std::string(R"({"header_files": {")") + name + R"(": ")" + file + "\"}}")
              .rfind(std::string("'header_files': '") + name + "' is the HTTP transport's own",
                     0) == 0);
  }
}
