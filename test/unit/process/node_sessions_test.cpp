#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/startup_error.hpp"
#include "eventually.hpp"
#include "process/node_sessions.hpp"

using namespace tokenspeed::metrics;
using test::eventually;

namespace {

// What the in-process test outputs did, in order.
std::vector<std::string> g_calls;
std::atomic<bool> g_release_stuck{false};
std::atomic<bool> g_stuck_returned{false};

int validate(void*, const char* config, size_t size, tsm_buffer* normalized, tsm_buffer*) {
  normalized->assign(normalized, config, size);
  return TSM_OK;
}
int create_sink(void*, const char*, size_t, tsm_sink*, tsm_buffer*) { return TSM_ERROR; }

int close_session(void* self, int64_t, tsm_buffer*) {
  g_calls.push_back(std::string("close ") + static_cast<const char*>(self));
  return TSM_OK;
}
int close_stuck(void*, int64_t, tsm_buffer*) {
  while (!g_release_stuck.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  g_stuck_returned = true;
  return TSM_OK;
}
int close_failing(void* self, int64_t, tsm_buffer* error) {
  g_calls.push_back(std::string("close ") + static_cast<const char*>(self));
  error->assign(error, "flush failed", 12);
  return TSM_ERROR;
}
const tsm_node_session_vtable kVtable = {sizeof(tsm_node_session_vtable), close_session};
const tsm_node_session_vtable kStuckVtable = {sizeof(tsm_node_session_vtable), close_stuck};
const tsm_node_session_vtable kFailingVtable = {sizeof(tsm_node_session_vtable), close_failing};

// user_data is the session name; "fail" fails, "stuck" ignores its timeout.
int start_node(void* user_data, const char*, size_t, tsm_node_session* session,
               tsm_buffer* producer_config, tsm_buffer* error) {
  const char* name = static_cast<const char*>(user_data);
  g_calls.push_back(std::string("start ") + name);
  if (std::strcmp(name, "fail") == 0) {
    error->assign(error, "collector unreachable", 21);
    return TSM_ERROR;
  }
  session->vtable = std::strcmp(name, "stuck") == 0       ? &kStuckVtable
                    : std::strcmp(name, "bad-close") == 0 ? &kFailingVtable
                                                          : &kVtable;
  session->self = user_data;
  const std::string config = std::string("{\"session\":\"") + name + "\"}";
  producer_config->assign(producer_config, config.data(), config.size());
  return TSM_OK;
}

struct TestOutput {
  explicit TestOutput(const char* name, bool with_start_node = true)
      : reporter(descriptor(name, with_start_node), "test", "test.so") {}
  static tsm_reporter_descriptor descriptor(const char* name, bool with_start_node) {
    tsm_reporter_descriptor d{};
    d.struct_size = sizeof d;
    d.name = name;
    d.validate = validate;
    d.create_sink = create_sink;
    d.start_node = with_start_node ? start_node : nullptr;
    d.user_data = const_cast<char*>(name);
    return d;
  }
  SelectedOutput selected() const { return {reporter.name(), &reporter, {{"key", "value"}}}; }
  Reporter reporter;
};

std::vector<std::string> warnings;
NodeSessions make_sessions() {
  warnings.clear();
  return NodeSessions([](const std::string& line) { warnings.push_back(line); });
}

}  // namespace

TEST_CASE("node sessions are closed in reverse order of creation, once") {
  g_calls.clear();
  TestOutput a("a"), plain("plain", false), b("b");
  NodeSessions sessions = make_sessions();
  const auto outputs =
      sessions.start({a.selected(), plain.selected(), b.selected()}, std::chrono::seconds(1));
  REQUIRE(outputs.size() == 3);
  CHECK(outputs[0].producer_config == boost::json::object{{"session", "a"}});
  // Without start_node the normalized configuration is the producer configuration.
  CHECK(outputs[1].producer_config == boost::json::object{{"key", "value"}});
  CHECK(outputs[2].producer_config == boost::json::object{{"session", "b"}});
  sessions.close(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  sessions.close(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  CHECK(g_calls == std::vector<std::string>{"start a", "start b", "close b", "close a"});
}

TEST_CASE(
    "a failing start_node closes the sessions started before it and fails startup with its "
    "message") {
  g_calls.clear();
  TestOutput a("a"), fail("fail"), c("c");
  NodeSessions sessions = make_sessions();
  try {
    sessions.start({a.selected(), fail.selected(), c.selected()}, std::chrono::seconds(1));
    FAIL("no error");
  } catch (const StartupError& error) {
    CHECK(error.context().reporter == "fail");
    CHECK_THAT(error.what(), Catch::Contains("collector unreachable"));
  }
  CHECK(g_calls == std::vector<std::string>{"start a", "start fail", "close a"});
  CHECK(sessions.size() == 0);
}

TEST_CASE("an error while closing one node session does not skip the others") {
  g_calls.clear();
  TestOutput a("a"), bad("bad-close");
  NodeSessions sessions = make_sessions();
  sessions.start({a.selected(), bad.selected()}, std::chrono::seconds(1));
  sessions.close(std::chrono::steady_clock::now() + std::chrono::seconds(1));
  CHECK(g_calls ==
        std::vector<std::string>{"start a", "start bad-close", "close bad-close", "close a"});
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("flush failed"));
}

TEST_CASE("a node session that ignores its close timeout is abandoned and the others still close") {
  g_calls.clear();
  g_release_stuck = false;
  g_stuck_returned = false;
  TestOutput a("a"), stuck("stuck");
  NodeSessions sessions = make_sessions();
  sessions.start({a.selected(), stuck.selected()}, std::chrono::seconds(1));
  sessions.close(std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
  // close returned while the stuck session is still inside its close.
  CHECK_FALSE(g_stuck_returned.load());
  CHECK(g_calls.back() == "close a");
  REQUIRE(warnings.size() == 1);
  CHECK_THAT(warnings[0], Catch::Contains("abandoned"));
  g_release_stuck = true;
  REQUIRE(eventually([] { return g_stuck_returned.load(); }));
}
