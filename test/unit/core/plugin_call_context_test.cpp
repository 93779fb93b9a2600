// plugin_call_context_test.cpp — a thread knows which plugin call it is in
// while the call's scope lives, nested scopes restore the outer call, and
// each thread has its own.
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include "core/plugin_call_context.hpp"

using namespace tokenspeed::metrics;

TEST_CASE("outside plugin code a thread is in no plugin call") {
  CHECK(current_plugin_call() == nullptr);
}

TEST_CASE("a scope names the plugin call for its lifetime") {
  static const char kEmit[] = "output 'x' (plugin file '/p/x.so') in emit";
  {
    PluginCallScope scope(kEmit);
    CHECK(current_plugin_call() == kEmit);
  }
  CHECK(current_plugin_call() == nullptr);
}

TEST_CASE("a nested scope restores the outer call when it ends") {
  static const char kOuter[] = "output 'a' in create_sink";
  static const char kInner[] = "output 'a' in emit";
  PluginCallScope outer(kOuter);
  {
    PluginCallScope inner(kInner);
    CHECK(current_plugin_call() == kInner);
  }
  CHECK(current_plugin_call() == kOuter);
}

TEST_CASE("each thread has its own plugin call") {
  static const char kMain[] = "output 'main' in emit";
  static const char kOther[] = "output 'other' in close";
  PluginCallScope scope(kMain);
  const char* seen_before = kMain;
  const char* seen_inside = nullptr;
  std::thread other([&] {
    seen_before = current_plugin_call();
    PluginCallScope inner(kOther);
    seen_inside = current_plugin_call();
  });
  other.join();
  CHECK(seen_before == nullptr);
  CHECK(seen_inside == kOther);
  CHECK(current_plugin_call() == kMain);
}
