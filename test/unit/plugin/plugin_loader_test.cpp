// plugin_loader_test.cpp — unit tests of host/plugin_loader against real
// shared objects (test/unit/plugin_fixtures): directory order, names, disabling,
// shadowing, security checks, load failures, the thread check and rollback.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "plugin/plugin_loader.hpp"
#include "plugin_fixtures/unit_plugin_files.hpp"
#include "plugin/reporter_registry.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::PluginDir;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// One registry + loader with the warnings it printed.
struct Harness {
  ReporterRegistry registry;
  std::vector<std::string> warnings;
  PluginLoader loader{registry, [this](const std::string& line) { warnings.push_back(line); }};

  void load(std::vector<std::string> dirs, std::string disabled = {}, bool allow_insecure = false) {
    PluginSearchOptions options;
    options.plugin_dirs = std::move(dirs);
    options.disabled_plugins = std::move(disabled);
    options.allow_insecure = allow_insecure;
    loader.load(options);
  }
  const PluginRecord& record(const std::string& name) const {
    for (const PluginRecord& record : loader.plugins()) {
      if (record.name == name) return record;
    }
    FAIL("no plugin record named " << name);
    throw std::logic_error("unreachable");
  }
};

}  // namespace

TEST_CASE("the plugin's name is its file name without a lib prefix and .so", "[loader]") {
  CHECK(plugin_name_from_file("jsonl.so") == "jsonl");
  CHECK(plugin_name_from_file("libjsonl.so") == "jsonl");
  CHECK(plugin_name_from_file("library.so") == "rary");
  CHECK(plugin_name_from_file("lib.so") == "lib");
  CHECK(plugin_name_from_file("jsonl.so.1").empty());
  CHECK(plugin_name_from_file("jsonl.txt").empty());
  CHECK(plugin_name_from_file(".so").empty());
  CHECK(plugin_name_from_file(".hidden.so").empty());
}

TEST_CASE(
    "plugin directories: each --metrics-plugin-dir, then TOKENSPEED_PLUGIN_PATH, then the "
    "installed default",
    "[loader]") {
  PluginSearchOptions options;
  options.plugin_dirs = {"/flag/one", "/flag/two"};
  options.plugin_path = "/env/a::/env/b:";
  options.default_dir = "/installed";
  CHECK(plugin_directories(options) ==
        std::vector<std::string>{"/flag/one", "/flag/two", "/env/a", "/env/b", "/installed"});

  // A directory listed again (by any spelling) is searched once, where it first appears.
  options.plugin_path = "/flag/one:/installed/";
  CHECK(plugin_directories(options) ==
        std::vector<std::string>{"/flag/one", "/flag/two", "/installed/"});
}

TEST_CASE(
    "a relative plugin directory is taken from the directory of the host's code, an absolute one "
    "as it is",
    "[loader]") {
  CHECK(plugin_dir_from_library("/opt/plugins") == "/opt/plugins");
  CHECK(plugin_dir_from_library("").empty());
  // The host's code is linked into this test program: its directory is the base.
  std::error_code ignored;
  const std::filesystem::path program =
      std::filesystem::weakly_canonical("/proc/self/exe", ignored);
  CHECK(plugin_dir_from_library("../plugins") ==
        (program.parent_path().parent_path() / "plugins").string());
  CHECK(plugin_dir_from_library("plugins/./x") == (program.parent_path() / "plugins/x").string());
  // Never the working directory.
  CHECK(plugin_dir_from_library("plugins").front() == '/');
}

TEST_CASE("the environment supplies TOKENSPEED_PLUGIN_PATH and TOKENSPEED_DISABLE_PLUGINS",
          "[loader]") {
  ::setenv("TOKENSPEED_PLUGIN_PATH", "/x:/y", 1);
  ::setenv("TOKENSPEED_DISABLE_PLUGINS", "a,b", 1);
  const PluginSearchOptions options = PluginSearchOptions::from_environment({"/d"}, true);
  ::unsetenv("TOKENSPEED_PLUGIN_PATH");
  ::unsetenv("TOKENSPEED_DISABLE_PLUGINS");
  CHECK(options.plugin_dirs == std::vector<std::string>{"/d"});
  CHECK(options.plugin_path == "/x:/y");
  CHECK(options.disabled_plugins == "a,b");
  CHECK(options.default_dir == default_plugin_dir());
  CHECK(options.allow_insecure);
}

TEST_CASE("a plugin that registers two names is loaded with both", "[loader]") {
  PluginDir dir;
  const std::string path = dir.add_plugin("unit_two_names.so");
  dir.add_plugin("libunit_prefixed.so");
  Harness h;
  h.load({dir.str()});
  CHECK(h.warnings.empty());
  REQUIRE(h.loader.plugins().size() == 2);
  const PluginRecord& record = h.record("unit_two_names");
  CHECK(record.path == path);
  CHECK(record.status == PluginStatus::loaded);
  CHECK(record.reason.empty());
  CHECK(record.reporters == std::vector<std::string>{"unit.alpha", "unit-beta"});
  REQUIRE(h.registry.find("unit.alpha") != nullptr);
  CHECK_FALSE(h.registry.find("unit.alpha")->has_start_node());
  REQUIRE(h.registry.find("unit-beta") != nullptr);
  CHECK(h.registry.find("unit-beta")->has_start_node());
  CHECK(h.record("unit_prefixed").status == PluginStatus::loaded);
  CHECK(h.registry.find("unit_prefixed") != nullptr);
}

TEST_CASE("every .so in a directory is loaded in sorted order", "[loader]") {
  // unit_duplicate.so sorts before unit_two_names.so, so it owns unit.alpha
  // and unit_two_names fails without override.
  PluginDir dir;
  dir.add_plugin("unit_two_names.so");
  dir.add_plugin("unit_duplicate.so");
  dir.write("README", "not a plugin");
  Harness h;
  h.load({dir.str()});
  REQUIRE(h.loader.plugins().size() == 2);
  CHECK(h.loader.plugins()[0].name == "unit_duplicate");
  CHECK(h.loader.plugins()[1].name == "unit_two_names");
  CHECK(h.record("unit_duplicate").status == PluginStatus::loaded);
  const PluginRecord& failed = h.record("unit_two_names");
  CHECK(failed.status == PluginStatus::failed);
  CHECK(contains(failed.reason, "registration failed:"));
  CHECK(contains(failed.reason, "already registered"));
  CHECK(h.registry.find("unit.alpha")->plugin_name() == "unit_duplicate");
  CHECK(h.registry.find("unit-beta") == nullptr);
  REQUIRE(h.warnings.size() == 1);
  CHECK(h.warnings[0] == "plugin '" + failed.path + "': " + failed.reason);
}

TEST_CASE("override replaces a name from an earlier directory", "[loader]") {
  PluginDir first;
  PluginDir second;
  first.add_plugin("unit_two_names.so");
  second.add_plugin("unit_override.so");
  Harness h;
  h.load({first.str(), second.str()});
  CHECK(h.warnings.empty());
  CHECK(h.record("unit_override").status == PluginStatus::loaded);
  CHECK(h.registry.find("unit.alpha")->plugin_name() == "unit_override");
  CHECK(h.registry.find("unit-beta")->plugin_name() == "unit_two_names");
}

TEST_CASE("a failing register rolls back every name it registered", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_fails_after_register.so");
  Harness h;
  h.load({dir.str()});
  const PluginRecord& record = h.record("unit_fails_after_register");
  CHECK(record.status == PluginStatus::failed);
  CHECK(record.reason == "registration failed: deliberate failure after registering");
  CHECK(record.reporters == std::vector<std::string>{"unit_rollback"});
  CHECK(h.registry.find("unit_rollback") == nullptr);
  CHECK(contains(h.loader.unavailable_reason("unit_rollback"), record.path));
  CHECK(contains(h.loader.unavailable_reason("unit_rollback"), "deliberate failure"));
  CHECK(h.loader.unavailable_reason("something_else").empty());
}

TEST_CASE("a register that accepts a rejected registration still fails as a whole", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_ignores_rejection.so");
  Harness h;
  h.load({dir.str()});
  const PluginRecord& record = h.record("unit_ignores_rejection");
  CHECK(record.status == PluginStatus::failed);
  CHECK(contains(record.reason, "registration failed:"));
  CHECK(contains(record.reason, "reserved"));
  CHECK(h.registry.find("unit_kept") == nullptr);
}

TEST_CASE("a register that starts a thread is rejected", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_thread.so");
  Harness h;
  h.load({dir.str()});
  const PluginRecord& record = h.record("unit_thread");
  CHECK(record.status == PluginStatus::failed);
  CHECK(contains(record.reason, "started a thread during registration"));
  CHECK(h.registry.find("unit_thread") == nullptr);
  REQUIRE(h.warnings.size() == 1);
  CHECK(contains(h.warnings[0], "started a thread during registration"));
}

TEST_CASE("a plugin that does not support API version 1 is rolled back", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_wrong_api.so");
  Harness h;
  h.load({dir.str()});
  const PluginRecord& record = h.record("unit_wrong_api");
  CHECK(record.status == PluginStatus::failed);
  CHECK(contains(record.reason, "does not support metric reporter API version 1"));
  CHECK(contains(record.reason, "needs metric reporter API 99"));
  CHECK(h.registry.find("unit_wrong_api") == nullptr);
}

TEST_CASE("a file without tsm_register or that cannot be loaded fails with a warning", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_no_symbol.so");
  const std::string garbage = dir.write("garbage.so", "this is not an ELF file");
  ::chmod(garbage.c_str(), 0755);
  dir.add_plugin("unit_two_names.so");
  Harness h;
  h.load({dir.str()});
  CHECK(h.record("unit_no_symbol").reason == "does not export tsm_register");
  const PluginRecord& bad = h.record("garbage");
  CHECK(bad.status == PluginStatus::failed);
  CHECK(bad.reason == "is not an ELF file (not a shared library)");  // seen before dlopen
  CHECK(h.record("unit_two_names").status == PluginStatus::loaded);  // others unaffected
  CHECK(h.warnings.size() == 2);
}

TEST_CASE("TOKENSPEED_DISABLE_PLUGINS skips a plugin before it is loaded", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_two_names.so");
  dir.add_plugin("unit_thread.so");  // would fail if loaded
  Harness h;
  h.load({dir.str()}, " unit_thread , unit_two_names");
  CHECK(h.warnings.empty());
  for (const PluginRecord& record : h.loader.plugins()) {
    CHECK(record.status == PluginStatus::disabled);
    CHECK(record.reason == "disabled by TOKENSPEED_DISABLE_PLUGINS");
  }
  CHECK(h.registry.names().empty());
  CHECK(contains(h.loader.unavailable_reason("unit_two_names"),
                 "disabled by TOKENSPEED_DISABLE_PLUGINS"));
}

TEST_CASE("the same plugin name in a later directory is shadowed: the first directory wins",
          "[loader]") {
  PluginDir first;
  PluginDir second;
  const std::string winner = first.add_plugin("unit_two_names.so");
  const std::string later = second.add_plugin("unit_two_names.so", "libunit_two_names.so");
  Harness h;
  h.load({first.str(), second.str()});
  REQUIRE(h.loader.plugins().size() == 2);
  CHECK(h.loader.plugins()[0].status == PluginStatus::loaded);
  CHECK(h.loader.plugins()[1].path == later);
  CHECK(h.loader.plugins()[1].status == PluginStatus::shadowed);
  CHECK(contains(h.loader.plugins()[1].reason, winner));
  CHECK(h.warnings.empty());
}

TEST_CASE("a directory or file other users can write to is refused unless allowed", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_two_names.so");
  ::chmod(dir.str().c_str(), 0777);
  {
    Harness h;
    h.load({dir.str()});
    const PluginRecord& record = h.record("unit_two_names");
    CHECK(record.status == PluginStatus::insecure);
    CHECK(contains(record.reason, "is writable by other users"));
    CHECK(contains(record.reason, dir.str()));
    REQUIRE(h.warnings.size() == 1);
    CHECK(h.warnings[0].rfind("plugin '" + record.path + "': ", 0) == 0);
    CHECK(h.registry.names().empty());
  }
  ::chmod(dir.str().c_str(), 0755);
  PluginDir other;
  const std::string file = other.add_plugin("unit_two_names.so");
  ::chmod(file.c_str(), 0757);
  {
    Harness h;
    h.load({other.str()});
    CHECK(h.record("unit_two_names").status == PluginStatus::insecure);
    CHECK(contains(h.record("unit_two_names").reason, "file is writable by other users"));
  }
  {
    Harness h;
    h.load({other.str()}, {}, /*allow_insecure=*/true);
    CHECK(h.record("unit_two_names").status == PluginStatus::loaded);
    CHECK(h.warnings.empty());
  }
}

TEST_CASE("a file not owned by root or the current user is refused", "[loader]") {
  PluginDir dir;
  const std::string file = dir.add_plugin("unit_two_names.so");
  if (::geteuid() != 0) {
    WARN("not root: cannot give a file to another user; ownership rule not exercised");
    CHECK(insecure_reason(file).empty());
    return;
  }
  REQUIRE(::chown(file.c_str(), 54321, 54321) == 0);
  CHECK(contains(insecure_reason(file), "is not owned by root or the current user"));
  Harness h;
  h.load({dir.str()});
  CHECK(h.record("unit_two_names").status == PluginStatus::insecure);
}

TEST_CASE("register is called once per process per plugin file", "[loader]") {
  PluginDir dir;
  dir.add_plugin("unit_two_names.so");
  Harness first;
  first.load({dir.str()});
  CHECK(first.record("unit_two_names").status == PluginStatus::loaded);
  Harness second;
  second.load({dir.str()});
  const PluginRecord& again = second.record("unit_two_names");
  CHECK(again.status == PluginStatus::failed);
  CHECK(contains(again.reason, "already ran in this process"));
  CHECK(second.registry.names().empty());
}

TEST_CASE("a missing plugin directory is skipped", "[loader]") {
  Harness h;
  h.load({"/nonexistent/tsm-plugins"});
  CHECK(h.loader.plugins().empty());
  CHECK(h.warnings.empty());
  CHECK(h.loader.directories().front() == "/nonexistent/tsm-plugins");
}

TEST_CASE("load_one loads one given file with the checks of a directory scan", "[loader]") {
  PluginDir dir;
  const std::string path = dir.add_plugin("unit_two_names.so");
  const std::string garbage = dir.write("garbage.so", "this is not an ELF file");
  Harness h;
  const PluginRecord& loaded = h.loader.load_one(path, false);
  CHECK(loaded.status == PluginStatus::loaded);
  CHECK(loaded.name == "unit_two_names");
  CHECK(h.registry.find("unit.alpha") != nullptr);
  const PluginRecord& bad = h.loader.load_one(garbage, false);
  CHECK(bad.status == PluginStatus::failed);
  CHECK(bad.reason == "is not an ELF file (not a shared library)");
  const PluginRecord& missing = h.loader.load_one(dir.str() + "/missing.so", false);
  CHECK(missing.status == PluginStatus::failed);
  CHECK(h.loader.plugins().size() == 3);
  CHECK(h.warnings.size() == 2);
}
