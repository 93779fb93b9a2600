// registration_test.cpp — kit::reporter_of: validate is the table's check
// plus the output's own, create_sink gets the checked, typed settings, and
// the reporter carries the version and the table's description. (The
// registration through the host is exercised by every shipped plugin.)
#include <catch2/catch.hpp>

#include <memory>
#include <stdexcept>
#include <string>

#include <tokenspeed/kit/registration.hpp>

namespace kit = tokenspeed::metrics::kit;
namespace json = tokenspeed::metrics::kit::json;
namespace plugin = tokenspeed::metrics::plugin;

namespace {

struct CountingSink {
  int64_t size = 0;
  void emit(const tsm_metric_event&) {}
  void close(std::chrono::nanoseconds) {}
};

const kit::SettingsTable& table() {
  static const kit::SettingsTable t{{
      {"size", kit::SettingType::kInteger, "10", 1, 100, "How many."},
      {"limit", kit::SettingType::kInteger, "50", 1, 100, "At least size."},
  }};
  return t;
}

void check(json::Value& settings) {
  if (settings.at("limit").as_integer() < settings.at("size").as_integer())
    throw std::invalid_argument("'limit' must be at least 'size'");
}

std::unique_ptr<CountingSink> create_sink(const kit::Settings& settings, const plugin::Host&) {
  auto sink = std::make_unique<CountingSink>();
  sink->size = settings.integer("size");
  return sink;
}

}  // namespace

TEST_CASE("reporter_of checks with the table and the output's check, then creates") {
  const plugin::Reporter<CountingSink> reporter =
      kit::reporter_of<CountingSink>({"counting", "1.2.3", &table(), check, create_sink});
  CHECK(reporter.name == "counting");
  CHECK(reporter.version == "1.2.3");
  CHECK(reporter.settings == table().describe());
  CHECK_FALSE(reporter.start_node);
  CHECK(reporter.validate(R"({"size": 20})") == R"({"size":20,"limit":50})");
  CHECK_THROWS_WITH(reporter.validate(R"({"size": 60})"), "'limit' must be at least 'size'");
  CHECK_THROWS_WITH(reporter.validate(R"({"sise": 1})"), Catch::Contains("unknown key 'sise'"));
  CHECK(reporter.create_sink(R"({"size": 7})", plugin::Host())->size == 7);
  CHECK_THROWS(reporter.create_sink(R"({"size": 70})", plugin::Host()));
}

TEST_CASE("reporter_of needs a settings table and create_sink") {
  CHECK_THROWS_AS(kit::reporter_of<CountingSink>({"counting", "", nullptr, check, create_sink}),
                  std::invalid_argument);
  CHECK_THROWS_AS(kit::reporter_of<CountingSink>({"counting", "", &table(), check, {}}),
                  std::invalid_argument);
}
