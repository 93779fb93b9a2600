// http_exporter_test.cpp — the settings every HTTP exporter shares (URL and
// header checks with their messages, the client options they make) and the
// quote of a receiver's answer. The exporter itself runs against real
// receivers in test/integration (otlp, remote_write).
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <tokenspeed/kit/http_exporter.hpp>

namespace kit = tokenspeed::metrics::kit;
namespace json = tokenspeed::metrics::kit::json;

namespace {

json::Value settings(const std::string& url, const std::string& headers = "{}") {
  return json::parse(R"({"url": ")" + url + R"(", "headers": )" + headers +
                     R"(, "initial_backoff_ms": 10, "max_backoff_ms": 5})");
}

}  // namespace

TEST_CASE("the URL must be http or https, named by its key") {
  CHECK_NOTHROW(kit::check_http_settings(settings("https://example.com/x"), "url"));
  CHECK_THROWS_WITH(kit::check_http_settings(settings("ftp://example.com"), "url"),
                    "'url' must start with http:// or https://, got \"ftp://example.com\"");
}

TEST_CASE("a header name without ':', space or line break, a value without line break") {
  CHECK_NOTHROW(kit::check_http_settings(settings("http://a", R"({"api-key": "x y"})"), "url"));
  CHECK_THROWS_WITH(kit::check_http_settings(settings("http://a", R"({"a b": "x"})"), "url"),
                    "'headers': 'a b' is not a valid header");
  CHECK_THROWS_WITH(kit::check_http_settings(settings("http://a", R"({"a": "x\ny"})"), "url"),
                    "'headers': 'a' is not a valid header");
}

TEST_CASE("the backoff check and the client options of the settings") {
  CHECK_THROWS_WITH(kit::check_backoff_settings(settings("http://a")),
                    "'max_backoff_ms' must be at least 'initial_backoff_ms'");
  const kit::Settings typed(settings("http://a/b", R"({"A": "1", "B": "2"})"));
  const kit::HttpClientOptions options = kit::http_client_options(typed, "url");
  CHECK(options.url == "http://a/b");
  CHECK(options.headers == std::vector<std::string>{"A: 1", "B: 2"});
}

TEST_CASE("a receiver's answer is quoted printable, bounded, without its line break") {
  CHECK(kit::response_snippet("out of order sample\n") == "out of order sample");
  CHECK(kit::response_snippet("a\x01"
                              "b") == "a.b");
  CHECK(kit::response_snippet(std::string(500, 'x')).size() == kit::kResponseSnippetBytes);
}
