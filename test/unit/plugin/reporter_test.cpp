// reporter_test.cpp — the host's calls into one plugin's factories: validate
// normalizes or rejects with a startup error naming the output, create_sink
// and start_node return a usable handle or an error, and a handle that breaks
// the contract is refused (and closed, when it can be). Nothing a plugin does
// escapes as anything but an error result. The plugin here is in-process:
// a descriptor whose functions do what each case asks.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include <boost/json.hpp>

#include "core/startup_error.hpp"
#include "plugin/reporter.hpp"

using namespace tokenspeed::metrics;
using namespace std::chrono_literals;

namespace {

// What the fake plugin's functions do, and what the host did to it.
struct FakePlugin {
  int status = TSM_OK;
  const char* error = "";
  const char* result = "";  // validate's normalized text, start_node's producer configuration
  bool throws = false;
  bool close_function = true;
  bool emit_function = true;
  int closes = 0;
};

void put(tsm_buffer* buffer, const char* text) {
  if (*text != '\0') buffer->assign(buffer, text, std::strlen(text));
}

int close_handle(void* self, int64_t, tsm_buffer*) {
  ++static_cast<FakePlugin*>(self)->closes;
  return TSM_OK;
}
int emit_event(void*, const tsm_metric_event*, tsm_buffer*) { return TSM_OK; }

const tsm_sink_vtable kSinkVtable{sizeof(tsm_sink_vtable), emit_event, close_handle};
const tsm_sink_vtable kSinkWithoutEmit{sizeof(tsm_sink_vtable), nullptr, close_handle};
const tsm_sink_vtable kSinkWithoutClose{sizeof(tsm_sink_vtable), emit_event, nullptr};
const tsm_node_session_vtable kSessionVtable{sizeof(tsm_node_session_vtable), close_handle};

int fake_validate(void* user_data, const char*, size_t, tsm_buffer* normalized, tsm_buffer* error) {
  auto* plugin = static_cast<FakePlugin*>(user_data);
  if (plugin->throws) throw std::runtime_error("escaped");
  put(normalized, plugin->result);
  put(error, plugin->error);
  return plugin->status;
}

int fake_create_sink(void* user_data, const char*, size_t, tsm_sink* sink, tsm_buffer* error) {
  auto* plugin = static_cast<FakePlugin*>(user_data);
  if (plugin->throws) throw std::runtime_error("escaped");
  put(error, plugin->error);
  if (plugin->status != TSM_OK) return plugin->status;
  sink->vtable = !plugin->close_function  ? &kSinkWithoutClose
                 : !plugin->emit_function ? &kSinkWithoutEmit
                                          : &kSinkVtable;
  sink->self = plugin;
  return TSM_OK;
}

int fake_start_node(void* user_data, const char*, size_t, tsm_node_session* session,
                    tsm_buffer* producer_config, tsm_buffer* error) {
  auto* plugin = static_cast<FakePlugin*>(user_data);
  if (plugin->throws) throw std::runtime_error("escaped");
  put(error, plugin->error);
  if (plugin->status != TSM_OK) return plugin->status;
  session->vtable = &kSessionVtable;
  session->self = plugin;
  put(producer_config, plugin->result);
  return TSM_OK;
}

tsm_reporter_descriptor descriptor_of(FakePlugin& plugin, bool with_start_node = true) {
  tsm_reporter_descriptor descriptor{};
  descriptor.struct_size = sizeof descriptor;
  descriptor.name = "fake";
  descriptor.validate = fake_validate;
  descriptor.create_sink = fake_create_sink;
  descriptor.start_node = with_start_node ? fake_start_node : nullptr;
  descriptor.user_data = &plugin;
  descriptor.version = "1.2.3";
  descriptor.settings = "[]";
  return descriptor;
}

const boost::json::object kConfig{{"path", "/tmp/x"}};

// The message of the startup error validate throws, or "" if none.
std::string validate_error(const Reporter& reporter) {
  try {
    reporter.validate(kConfig, "/etc/metrics.json");
  } catch (const StartupError& error) {
    CHECK(error.reporter() == "fake");
    CHECK(error.file() == "/etc/metrics.json");
    return error.message();
  }
  return "";
}

}  // namespace

TEST_CASE("a reporter keeps its name, version, settings and plugin file") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  CHECK(reporter.name() == "fake");
  CHECK(reporter.version() == "1.2.3");
  CHECK(reporter.settings_description() == "[]");
  CHECK(reporter.plugin_path() == "/p/fake.so");
  CHECK(reporter.has_start_node());
}

TEST_CASE("a descriptor built before the appended fields has no version or settings") {
  FakePlugin plugin;
  tsm_reporter_descriptor old = descriptor_of(plugin);
  old.struct_size = offsetof(tsm_reporter_descriptor, version);
  const Reporter reporter(old, "fake_plugin", "/p/fake.so");
  CHECK(reporter.version().empty());
  CHECK(reporter.settings_description().empty());
}

TEST_CASE("validate returns the normalized settings, or the settings when it leaves none") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  CHECK(reporter.validate(kConfig) == kConfig);
  plugin.result = R"({"path": "/tmp/x", "flush_ms": 1000})";
  CHECK(reporter.validate(kConfig) == boost::json::object{{"path", "/tmp/x"}, {"flush_ms", 1000}});
}

TEST_CASE("a plugin's rejection of its settings is a startup error naming the output") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  plugin.status = TSM_ERROR;
  plugin.error = "unknown key 'pathh'";
  CHECK(validate_error(reporter) == "rejected its configuration: unknown key 'pathh'");
  plugin.error = "";
  CHECK(validate_error(reporter) == "rejected its configuration: validate returned status " +
                                        std::to_string(TSM_ERROR) + " without a message");
  plugin.status = TSM_OK;
  plugin.result = "[1]";
  CHECK(validate_error(reporter) == "validate did not return a JSON object: got an array");
  plugin.result = "";
  plugin.throws = true;
  CHECK(validate_error(reporter) == "rejected its configuration: an exception escaped validate");
}

TEST_CASE("create_sink returns the plugin's sink, or why there is none") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  CreateSinkResult result = reporter.create_sink(kConfig);
  REQUIRE(result.ok);
  CHECK(result.sink.vtable == &kSinkVtable);
  CHECK(result.sink.self == &plugin);

  plugin.status = TSM_ERROR;
  plugin.error = "cannot open /tmp/x";
  result = reporter.create_sink(kConfig);
  CHECK_FALSE(result.ok);
  CHECK(result.error == "create_sink failed: cannot open /tmp/x");

  plugin.status = TSM_OK;
  plugin.throws = true;
  CHECK(reporter.create_sink(kConfig).error == "an exception escaped create_sink");
}

TEST_CASE("a sink without close is refused; one without emit is refused and closed") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  plugin.close_function = false;
  CreateSinkResult result = reporter.create_sink(kConfig);
  CHECK_FALSE(result.ok);
  CHECK(result.error == "create_sink returned a sink without a close function");
  plugin.close_function = true;
  plugin.emit_function = false;
  result = reporter.create_sink(kConfig);
  CHECK_FALSE(result.ok);
  CHECK(result.error == "create_sink returned a sink without an emit function");
  CHECK(plugin.closes == 1);
}

TEST_CASE("without start_node the settings are the producers' configuration") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin, false), "fake_plugin", "/p/fake.so");
  CHECK_FALSE(reporter.has_start_node());
  const StartNodeResult result = reporter.start_node(kConfig, 1s);
  REQUIRE(result.ok);
  CHECK(result.producer_config == kConfig);
}

TEST_CASE("start_node returns its session and the producers' configuration") {
  FakePlugin plugin;
  plugin.result = R"({"socket": "/run/x.sock"})";
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  const StartNodeResult result = reporter.start_node(kConfig, 1s);
  REQUIRE(result.ok);
  CHECK(result.session.self == &plugin);
  CHECK(result.producer_config == boost::json::object{{"socket", "/run/x.sock"}});
  CHECK(plugin.closes == 0);
}

TEST_CASE("a session without a usable producer configuration is closed and refused") {
  FakePlugin plugin;
  const Reporter reporter(descriptor_of(plugin), "fake_plugin", "/p/fake.so");
  StartNodeResult result = reporter.start_node(kConfig, 1s);
  CHECK_FALSE(result.ok);
  CHECK(result.error == "start_node did not return a producer configuration");
  CHECK(plugin.closes == 1);
  plugin.result = "\"text\"";
  result = reporter.start_node(kConfig, 1s);
  CHECK(result.error == "start_node did not return a JSON object: got a string");
  CHECK(result.producer_config.empty());
  CHECK(plugin.closes == 2);
  plugin.status = TSM_ERROR;
  plugin.error = "port in use";
  CHECK(reporter.start_node(kConfig, 1s).error == "start_node failed: port in use");
  CHECK(plugin.closes == 2);
}
