// reporter_registry_test.cpp — unit tests of host/reporter_registry: unique
// names, override, the reserved name, valid names, rollback of a failed
// plugin and rejection of registrations after tsm_register returned.
#include <catch2/catch.hpp>

#include <cstring>
#include <string>

#include "core/abi_buffer.hpp"
#include "plugin/reporter_registry.hpp"

using namespace tokenspeed::metrics;

namespace {

int accept_validate(void*, const char*, size_t, tsm_buffer*, tsm_buffer*) { return TSM_OK; }
int no_sink(void*, const char*, size_t, tsm_sink*, tsm_buffer*) { return TSM_ERROR; }
int no_node(void*, const char*, size_t, tsm_node_session*, tsm_buffer*, tsm_buffer*) {
  return TSM_ERROR;
}

tsm_reporter_descriptor descriptor(const char* name, uint32_t override_flag = 0) {
  tsm_reporter_descriptor d{};
  d.struct_size = sizeof d;
  d.name = name;
  d.validate = accept_validate;
  d.create_sink = no_sink;
  d.override = override_flag;
  return d;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("valid names are 1-64 characters of [a-z0-9_.-]", "[registry]") {
  CHECK(is_valid_reporter_name("jsonl"));
  CHECK(is_valid_reporter_name("a.b-c_9"));
  CHECK(is_valid_reporter_name(std::string(64, 'x')));
  CHECK_FALSE(is_valid_reporter_name(""));
  CHECK_FALSE(is_valid_reporter_name(std::string(65, 'x')));
  CHECK_FALSE(is_valid_reporter_name("Upper"));
  CHECK_FALSE(is_valid_reporter_name("with space"));
  CHECK_FALSE(is_valid_reporter_name("a,b"));
  CHECK_FALSE(is_valid_reporter_name("caf\xc3\xa9"));
}

TEST_CASE("a registered reporter is found by its name and remembers its plugin", "[registry]") {
  ReporterRegistry registry;
  registry.begin("p", "/plugins/p.so");
  auto d = descriptor("out");
  d.start_node = no_node;
  CHECK(registry.add(&d).empty());
  registry.commit();
  const Reporter* reporter = registry.find("out");
  REQUIRE(reporter != nullptr);
  CHECK(reporter->name() == "out");
  CHECK(reporter->plugin_name() == "p");
  CHECK(reporter->plugin_path() == "/plugins/p.so");
  CHECK(reporter->has_start_node());
  CHECK_FALSE(reporter->override_flag());
  CHECK(registry.find("other") == nullptr);
  CHECK(registry.names() == std::vector<std::string>{"out"});
}

TEST_CASE("the registry copies the descriptor and the name string", "[registry]") {
  ReporterRegistry registry;
  char name[] = "copied";
  auto d = descriptor(name);
  registry.begin("p", "/p.so");
  REQUIRE(registry.add(&d).empty());
  registry.commit();
  std::strcpy(name, "change");
  d.validate = nullptr;
  const Reporter* reporter = registry.find("copied");
  REQUIRE(reporter != nullptr);
  CHECK(std::string(reporter->descriptor().name) == "copied");
  CHECK(reporter->descriptor().validate == accept_validate);
  CHECK(registry.find("change") == nullptr);
}

TEST_CASE("registering an existing name requires override; the later plugin wins", "[registry]") {
  ReporterRegistry registry;
  auto first = descriptor("out");
  registry.begin("a", "/a.so");
  REQUIRE(registry.add(&first).empty());
  registry.commit();

  auto again = descriptor("out");
  registry.begin("b", "/b.so");
  const std::string rejected = registry.add(&again);
  CHECK(contains(rejected, "already registered"));
  CHECK(contains(rejected, "/a.so"));
  CHECK(registry.rejections() == std::vector<std::string>{rejected});
  registry.rollback();
  CHECK(registry.find("out")->plugin_path() == "/a.so");

  auto replace = descriptor("out", 1);
  registry.begin("c", "/c.so");
  CHECK(registry.add(&replace).empty());
  registry.commit();
  CHECK(registry.find("out")->plugin_path() == "/c.so");
  CHECK(registry.find("out")->override_flag());
  // Both registrations stay visible per plugin file.
  CHECK(registry.registered_by("/a.so").size() == 1);
  CHECK(registry.registered_by("/c.so").size() == 1);
}

TEST_CASE("a plugin may not register the same name twice without override", "[registry]") {
  ReporterRegistry registry;
  auto d = descriptor("twice");
  registry.begin("p", "/p.so");
  CHECK(registry.add(&d).empty());
  CHECK(contains(registry.add(&d), "already registered"));
}

TEST_CASE("the name prometheus is reserved", "[registry]") {
  ReporterRegistry registry;
  registry.begin("p", "/p.so");
  for (uint32_t override_flag : {0u, 1u}) {
    auto d = descriptor("prometheus", override_flag);
    CHECK(contains(registry.add(&d), "reserved"));
  }
  registry.commit();
  CHECK(registry.find("prometheus") == nullptr);
}

TEST_CASE("invalid names are rejected", "[registry]") {
  ReporterRegistry registry;
  registry.begin("p", "/p.so");
  for (const char* name : {"", "Bad", "a b", "x/y"}) {
    auto d = descriptor(name);
    CHECK(contains(registry.add(&d), "invalid reporter name"));
  }
  auto unnamed = descriptor(nullptr);
  CHECK(contains(registry.add(&unnamed), "invalid reporter name"));
  const std::string long_name(65, 'a');
  auto too_long = descriptor(long_name.c_str());
  CHECK(contains(registry.add(&too_long), "invalid reporter name"));
  registry.commit();
  CHECK(registry.names().empty());
}

TEST_CASE("a registration with NULL validate or create_sink is rejected", "[registry]") {
  ReporterRegistry registry;
  registry.begin("p", "/p.so");
  auto no_validate = descriptor("a");
  no_validate.validate = nullptr;
  CHECK(contains(registry.add(&no_validate), "no validate"));
  auto no_create = descriptor("b");
  no_create.create_sink = nullptr;
  CHECK(contains(registry.add(&no_create), "no create_sink"));
  CHECK_FALSE(registry.add(nullptr).empty());
  auto too_small = descriptor("c");
  too_small.struct_size = 8;
  CHECK(contains(registry.add(&too_small), "struct_size"));
  registry.commit();
  CHECK(registry.names().empty());
}

TEST_CASE("failed plugin registration rolls back its metric registrations", "[registry]") {
  ReporterRegistry registry;
  auto original = descriptor("shared");
  registry.begin("a", "/a.so");
  REQUIRE(registry.add(&original).empty());
  registry.commit();

  auto own = descriptor("own");
  auto replace = descriptor("shared", 1);
  registry.begin("b", "/b.so");
  REQUIRE(registry.add(&own).empty());
  REQUIRE(registry.add(&replace).empty());
  CHECK(registry.attempted_names() == std::vector<std::string>{"own", "shared"});
  registry.rollback();

  CHECK(registry.find("own") == nullptr);
  REQUIRE(registry.find("shared") != nullptr);
  CHECK(registry.find("shared")->plugin_path() == "/a.so");
  CHECK(registry.registered_by("/b.so").empty());
}

TEST_CASE("registration calls after register returned are rejected", "[registry]") {
  ReporterRegistry registry;
  registry.begin("p", "/p.so");
  const tsm_host_api* api = registry.host_api();
  REQUIRE(api != nullptr);
  CHECK(api->api_version == TSM_METRIC_REPORTER_API_VERSION);
  CHECK(api->struct_size == sizeof(tsm_host_api));
  auto during = descriptor("during");
  AbiBuffer error;
  CHECK(api->register_metric_reporter(api->host_data, &during, error.get()) == TSM_OK);
  registry.commit();

  auto late = descriptor("late");
  CHECK(api->register_metric_reporter(api->host_data, &late, error.get()) == TSM_ERROR);
  CHECK(contains(error.str(), "after tsm_register returned"));
  CHECK(contains(registry.add(&late), "after tsm_register returned"));
  CHECK(registry.host_api() == nullptr);

  // A stored table of an earlier plugin is rejected during another's window.
  registry.begin("q", "/q.so");
  CHECK(api->register_metric_reporter(api->host_data, &late, error.get()) == TSM_ERROR);
  registry.commit();
  CHECK(registry.find("late") == nullptr);
  CHECK(registry.find("during") != nullptr);
}

TEST_CASE("the host API rejection message reaches the plugin's error buffer", "[registry]") {
  ReporterRegistry registry;
  registry.begin("p", "/p.so");
  const tsm_host_api* api = registry.host_api();
  auto reserved = descriptor("prometheus");
  AbiBuffer error;
  CHECK(api->register_metric_reporter(api->host_data, &reserved, error.get()) == TSM_ERROR);
  CHECK(contains(error.str(), "reserved"));
  registry.commit();
}

TEST_CASE("a host table kept by a plugin stays safe after the registry is gone", "[registry]") {
  const tsm_host_api* api = nullptr;
  {
    ReporterRegistry registry;
    registry.begin("p", "/p.so");
    api = registry.host_api();
    registry.commit();
  }
  auto late = descriptor("late");
  AbiBuffer error;
  CHECK(api->register_metric_reporter(api->host_data, &late, error.get()) == TSM_ERROR);
  CHECK(contains(error.str(), "after tsm_register returned"));
  api->log(api->host_data, TSM_LOG_DEBUG, "still safe to log");
}

TEST_CASE("what a plugin logs while registering is kept as its notes, debug lines included",
          "[registry]") {
  ReporterRegistry registry;
  registry.begin("bridge", "/bridge.so");
  const tsm_host_api* api = registry.host_api();
  api->log(api->host_data, TSM_LOG_DEBUG, "package 'a' is disabled");
  api->log(api->host_data, TSM_LOG_WARNING, "package 'b' is failed");
  registry.commit();
  api->log(api->host_data, TSM_LOG_WARNING, "logged after registration");
  CHECK(registry.registration_notes() ==
        std::vector<std::string>{"package 'a' is disabled", "package 'b' is failed"});

  registry.begin("quiet", "/quiet.so");
  registry.rollback();
  CHECK(registry.registration_notes().empty());  // the notes of the last window only
}
