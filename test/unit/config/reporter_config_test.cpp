// reporter_config_test.cpp — unit tests of host/reporter_config: the
// selection rules, the configuration file rules and the startup validation
// of issue 2, plus the Reporter calls they rely on.
#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "core/abi_buffer.hpp"
#include "config/metrics_flags.hpp"
#include "plugin_fixtures/unit_plugin_files.hpp"
#include "config/metrics_startup.hpp"
#include "config/reporter_config.hpp"
#include "core/startup_error.hpp"

using namespace tokenspeed::metrics;
using tokenspeed::metrics::test::PluginDir;

namespace {

int validate_calls = 0;
std::vector<std::string> validated_inputs;

void assign(tsm_buffer* buffer, const std::string& text) {
  buffer->assign(buffer, text.data(), text.size());
}

// Accepts {"endpoint": string, "queue_size": number}; "nonobject" makes it
// return an array; anything else is rejected. Normalizes by adding defaults.
int test_validate(void*, const char* config, size_t size, tsm_buffer* normalized,
                  tsm_buffer* error) {
  ++validate_calls;
  validated_inputs.emplace_back(config, size);
  boost::json::object object = boost::json::parse(std::string(config, size)).as_object();
  if (object.contains("nonobject")) {
    assign(normalized, "[1]");
    return TSM_OK;
  }
  for (const auto& entry : object) {
    if (entry.key() != "endpoint" && entry.key() != "queue_size") {
      assign(error,
             "unknown setting '" + std::string(entry.key()) + "' (allowed: endpoint, queue_size)");
      return TSM_ERROR;
    }
  }
  if (!object.contains("queue_size")) object["queue_size"] = 10000;
  assign(normalized, boost::json::serialize(object));
  return TSM_OK;
}

int silent_reject(void*, const char*, size_t, tsm_buffer*, tsm_buffer*) { return TSM_ERROR; }
int echo_validate(void*, const char*, size_t, tsm_buffer*, tsm_buffer*) { return TSM_OK; }

int created_sinks = 0;
int emit_nothing(void*, const tsm_metric_event*, tsm_buffer*) { return TSM_OK; }
int close_nothing(void*, int64_t, tsm_buffer*) { return TSM_OK; }
const tsm_sink_vtable kSinkVtable{sizeof(tsm_sink_vtable), emit_nothing, close_nothing};
int test_create_sink(void*, const char*, size_t, tsm_sink* sink, tsm_buffer*) {
  ++created_sinks;
  sink->vtable = &kSinkVtable;
  sink->self = &created_sinks;
  return TSM_OK;
}
int failing_create_sink(void*, const char*, size_t, tsm_sink*, tsm_buffer* error) {
  assign(error, "cannot open the spool");
  return TSM_ERROR;
}

int closed_sessions = 0;
int close_session(void*, int64_t, tsm_buffer*) {
  ++closed_sessions;
  return TSM_OK;
}
const tsm_node_session_vtable kSessionVtable{sizeof(tsm_node_session_vtable), close_session};
int bad_start_node(void*, const char*, size_t, tsm_node_session* session, tsm_buffer* producer,
                   tsm_buffer*) {
  session->vtable = &kSessionVtable;
  assign(producer, "\"a socket\"");
  return TSM_OK;
}
int good_start_node(void*, const char*, size_t, tsm_node_session* session, tsm_buffer* producer,
                    tsm_buffer*) {
  session->vtable = &kSessionVtable;
  assign(producer, R"({"spool":"/run/x"})");
  return TSM_OK;
}

tsm_reporter_descriptor descriptor(
    const char* name, decltype(tsm_reporter_descriptor::validate) validate = test_validate) {
  tsm_reporter_descriptor d{};
  d.struct_size = sizeof d;
  d.name = name;
  d.validate = validate;
  d.create_sink = test_create_sink;
  return d;
}

// A registry with "alpha", "beta" (test_validate), "silent" and "echo".
struct Fixture {
  ReporterRegistry registry;
  PluginDir dir;
  Fixture() {
    validate_calls = 0;
    validated_inputs.clear();
    registry.begin("test", "/plugins/test.so");
    for (auto d : {descriptor("alpha"), descriptor("beta"), descriptor("silent", silent_reject),
                   descriptor("echo", echo_validate)}) {
      REQUIRE(registry.add(&d).empty());
    }
    registry.commit();
  }
  Options enabled(std::vector<std::string> reporters, std::string file = {}) const {
    Options options;
    options.enable_metrics = true;
    options.reporters = std::move(reporters);
    options.reporter_config = std::move(file);
    return options;
  }
  std::string config(const std::string& text) const { return dir.write("metrics.json", text); }
};

StartupError startup_error(const std::function<void()>& action) {
  try {
    action();
  } catch (const StartupError& error) {
    return error;
  }
  FAIL("no StartupError was thrown");
  throw std::logic_error("unreachable");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("--metrics-reporters is repeatable and accepts comma-separated lists", "[config]") {
  CHECK(parse_reporter_selection({"prometheus", "alpha,beta", " gamma "}) ==
        std::vector<std::string>{"prometheus", "alpha", "beta", "gamma"});
}

TEST_CASE("selecting the same name twice selects it once, in first-seen order", "[config]") {
  CHECK(parse_reporter_selection({"beta,alpha", "beta", "alpha,prometheus,beta"}) ==
        std::vector<std::string>{"beta", "alpha", "prometheus"});
  Fixture f;
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"alpha", "alpha,alpha"}), f.registry, nullptr);
  REQUIRE(selection.outputs.size() == 1);
  CHECK(validate_calls == 1);
}

TEST_CASE("an empty reporter name is a startup error", "[config]") {
  const StartupError error = startup_error([] { parse_reporter_selection({"alpha,,beta"}); });
  CHECK(error.context().key == "--metrics-reporters");
  CHECK(contains(error.message(), "empty reporter name"));
  CHECK_THROWS_AS(parse_reporter_selection({""}), StartupError);
}

TEST_CASE("without an explicit reporter selection, --enable-metrics selects Prometheus only",
          "[config]") {
  Fixture f;
  const ReporterSelection selection = resolve_reporters(f.enabled({}), f.registry, nullptr);
  CHECK(selection.enabled);
  CHECK(selection.prometheus);
  CHECK(selection.outputs.empty());
  CHECK(selection.order == std::vector<std::string>{"prometheus"});
  CHECK(validate_calls == 0);
}

TEST_CASE("selecting only external outputs does not select Prometheus", "[config]") {
  Fixture f;
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"beta,alpha"}), f.registry, nullptr);
  CHECK_FALSE(selection.prometheus);
  REQUIRE(selection.outputs.size() == 2);
  CHECK(selection.outputs[0].name == "beta");
  CHECK(selection.outputs[1].name == "alpha");
  CHECK(selection.outputs[0].reporter == f.registry.find("beta"));
}

TEST_CASE("prometheus and external outputs keep their selection order", "[config]") {
  Fixture f;
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"alpha", "prometheus", "beta"}), f.registry, nullptr);
  CHECK(selection.prometheus);
  CHECK(selection.order == std::vector<std::string>{"alpha", "prometheus", "beta"});
  CHECK(selection.outputs.size() == 2);
}

TEST_CASE("an external output without a configuration entry receives an empty object", "[config]") {
  Fixture f;
  const std::string file = f.config(R"({"beta": {"endpoint": "https://m.example/ingest"}})");
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"alpha", "beta"}, file), f.registry, nullptr);
  REQUIRE(validated_inputs.size() == 2);
  CHECK(validated_inputs[0] == "{}");
  CHECK(boost::json::parse(validated_inputs[1]) ==
        boost::json::parse(R"({"endpoint":"https://m.example/ingest"})"));
  CHECK(selection.outputs[0].config == boost::json::parse(R"({"queue_size":10000})"));
  CHECK(selection.outputs[1].config ==
        boost::json::parse(R"({"endpoint":"https://m.example/ingest","queue_size":10000})"));
}

TEST_CASE("validate leaving the buffer empty keeps the settings as given", "[config]") {
  Fixture f;
  const std::string file = f.config(R"({"echo": {"anything": [1, 2]}})");
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"echo"}, file), f.registry, nullptr);
  CHECK(selection.outputs[0].config == boost::json::parse(R"({"anything":[1,2]})"));
}

TEST_CASE("an unknown selection fails startup", "[config]") {
  Fixture f;
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha,nope"}), f.registry, nullptr); });
  CHECK(error.context().reporter == "nope");
  CHECK(contains(error.what(), "reporter 'nope'"));
  CHECK(contains(error.message(), "unknown reporter"));
  CHECK(validate_calls == 0);
}

TEST_CASE("duplicate JSON keys fail startup, naming the file, reporter and key", "[config]") {
  Fixture f;
  const std::string file =
      f.config(R"({"alpha": {"endpoint": "a", "queue_size": 1, "queue_size": 2}})");
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
  CHECK(contains(error.message(), "duplicate key"));
  CHECK(error.context().file == file);
  CHECK(error.context().reporter == "alpha");
  CHECK(error.context().key == "alpha.queue_size");
  CHECK(contains(error.what(), "key 'alpha.queue_size'"));

  const std::string top = f.config(R"({"alpha": {}, "\u0061lpha": {}})");
  CHECK(contains(startup_error([&] {
                   resolve_reporters(f.enabled({"alpha"}, top), f.registry, nullptr);
                 }).message(),
                 "duplicate key"));
}

TEST_CASE("configuration for an unselected output fails startup", "[config]") {
  Fixture f;
  const std::string file = f.config(R"({"alpha": {}, "beta": {}})");
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
  CHECK(contains(error.message(), "not selected"));
  CHECK(error.context().reporter == "beta");
  CHECK(error.context().key == "beta");
  CHECK(error.context().file == file);
}

TEST_CASE("a prometheus entry fails startup: Prometheus is configured by its flags", "[config]") {
  Fixture f;
  const std::string file = f.config(R"({"prometheus": {"port": 9090}})");
  for (const auto& selection :
       {std::vector<std::string>{"prometheus"}, std::vector<std::string>{"alpha"}}) {
    const StartupError error =
        startup_error([&] { resolve_reporters(f.enabled(selection, file), f.registry, nullptr); });
    CHECK(contains(error.message(), "prometheus is configured by its command-line flags"));
    CHECK(error.context().reporter == "prometheus");
  }
}

TEST_CASE("a top level or entry that is not an object fails startup", "[config]") {
  Fixture f;
  for (const std::string text : {"[]", "\"alpha\"", "null", "3"}) {
    const std::string file = f.config(text);
    const StartupError error =
        startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
    CHECK(contains(error.message(), "must be a JSON object"));
    CHECK(error.context().file == file);
  }
  const std::string file = f.config(R"({"alpha": ["endpoint"]})");
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
  CHECK(contains(error.message(), "must be a JSON object"));
  CHECK(error.context().reporter == "alpha");
  CHECK(error.context().key == "alpha");
}

TEST_CASE("invalid JSON or an unreadable file fails startup", "[config]") {
  Fixture f;
  const std::string file = f.config("{\"alpha\": {");
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
  CHECK(contains(error.message(), "invalid JSON"));
  CHECK(error.context().file == file);
  const std::string missing = (f.dir.path() / "missing.json").string();
  const StartupError unreadable =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, missing), f.registry, nullptr); });
  CHECK(unreadable.context().file == missing);
  CHECK(unreadable.message() ==
        "the reporter configuration cannot be opened: No such file or directory");
}

TEST_CASE("a validate that rejects the settings fails startup with its message", "[config]") {
  Fixture f;
  const std::string file = f.config(R"({"alpha": {"endpont": "x"}})");
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
  CHECK(error.context().reporter == "alpha");
  CHECK(error.context().file == file);
  CHECK(error.message() ==
        "rejected its configuration: unknown setting 'endpont' (allowed: endpoint, queue_size)");
  const StartupError silent =
      startup_error([&] { resolve_reporters(f.enabled({"silent"}), f.registry, nullptr); });
  CHECK(contains(silent.message(), "rejected its configuration: validate returned status 1"));
}

TEST_CASE("a validate result that is not a JSON object fails startup", "[config]") {
  Fixture f;
  const std::string file = f.config(R"({"alpha": {"nonobject": true}})");
  const StartupError error =
      startup_error([&] { resolve_reporters(f.enabled({"alpha"}, file), f.registry, nullptr); });
  CHECK(error.context().reporter == "alpha");
  CHECK(contains(error.message(), "validate did not return a JSON object"));
}

namespace {

// A registry with "vault" (accepts anything) whose description marks "token"
// and the values of "headers" secret, with "header_files" beside them.
struct SecretFixture : Fixture {
  SecretFixture() {
    registry.begin("vault", "/plugins/vault.so");
    auto d = descriptor("vault", echo_validate);
    d.settings = R"([{"key": "endpoint", "type": "string", "default": ""},
                     {"key": "token", "type": "string", "default": "", "secret": true},
                     {"key": "headers", "type": "object of strings", "secret": true},
                     {"key": "header_files", "type": "object of strings"}])";
    REQUIRE(registry.add(&d).empty());
    registry.commit();
  }
  std::string config_with_mode(const std::string& text, std::filesystem::perms mode) const {
    const std::string path = config(text);
    std::filesystem::permissions(path, mode);
    return path;
  }
};

constexpr auto kMode0644 = std::filesystem::perms::owner_read |
                           std::filesystem::perms::owner_write |
                           std::filesystem::perms::group_read | std::filesystem::perms::others_read;
constexpr auto kMode0640 = std::filesystem::perms::owner_read |
                           std::filesystem::perms::owner_write | std::filesystem::perms::group_read;
constexpr auto kMode0600 = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;

}  // namespace

TEST_CASE(
    "a secret in a configuration file other users can read is warned about once, naming the "
    "reporter, the file and the key paths, never the value",
    "[config][secrets]") {
  SecretFixture f;
  const std::string file = f.config_with_mode(
      R"({"vault": {"endpoint": "https://v", "token": "tok-VALUE", "headers": {"api-key": "hdr-VALUE"}}})",
      kMode0644);
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"vault"}, file), f.registry, nullptr);
  REQUIRE(selection.warnings.size() == 1);
  const std::string& line = selection.warnings[0];
  CHECK(line == "vault: " + file +
                    ": 'token', 'headers.api-key' hold secrets and are readable by other users "
                    "(mode 0644); restrict it (chmod 600) or use header_files");
  CHECK_FALSE(contains(line, "VALUE"));
  // The plugin still receives the values as given.
  CHECK(selection.outputs[0].config.at("token") == "tok-VALUE");
}

TEST_CASE("a secret in a configuration file its group can read is warned about",
          "[config][secrets]") {
  SecretFixture f;
  const std::string file = f.config_with_mode(R"({"vault": {"token": "tok"}})", kMode0640);
  const ReporterSelection selection =
      resolve_reporters(f.enabled({"vault"}, file), f.registry, nullptr);
  REQUIRE(selection.warnings.size() == 1);
  CHECK(selection.warnings[0] == "vault: " + file +
                                     ": 'token' holds a secret and is readable by other users "
                                     "(mode 0640); restrict it (chmod 600)");
}

TEST_CASE("a secret in a private configuration file (0600) is not warned about",
          "[config][secrets]") {
  SecretFixture f;
  const std::string file = f.config_with_mode(R"({"vault": {"token": "tok"}})", kMode0600);
  CHECK(resolve_reporters(f.enabled({"vault"}, file), f.registry, nullptr).warnings.empty());
}

TEST_CASE("a readable configuration file without a secret value is not warned about",
          "[config][secrets]") {
  SecretFixture f;
  for (const std::string text :
       {R"({"vault": {"endpoint": "https://v", "token": "", "headers": {}}})",
        R"({"vault": {"header_files": {"api-key": "/run/key"}}})", R"({})"}) {
    const std::string file = f.config_with_mode(text, kMode0644);
    CHECK(resolve_reporters(f.enabled({"vault", "alpha"}, file), f.registry, nullptr)
              .warnings.empty());
  }
}

TEST_CASE("a reporter flag without --enable-metrics is reported as ignored", "[config]") {
  Options options;
  options.reporters = {"alpha"};
  options.reporter_config = "/etc/m.json";
  options.plugin_dirs = {"/p"};
  const std::vector<std::string> warnings = ignored_flag_warnings(options);
  CHECK(warnings ==
        std::vector<std::string>{"--metrics-reporters is ignored without --enable-metrics",
                                 "--metrics-reporter-config is ignored without --enable-metrics",
                                 "--metrics-plugin-dir is ignored without --enable-metrics"});
  options.enable_metrics = true;
  CHECK(ignored_flag_warnings(options).empty());
}

TEST_CASE("with metrics disabled no plugin is loaded and nothing is validated", "[config]") {
  PluginDir plugins;
  plugins.add_plugin("unit_thread.so");  // would warn if it were loaded
  Options options;
  options.reporters = {"unit_thread"};
  options.reporter_config = "/nonexistent/metrics.json";
  PluginSearchOptions search;
  search.plugin_dirs = {plugins.str()};
  std::vector<std::string> warnings;
  const MetricsStartup startup = load_metrics_startup(
      options, search, [&](const std::string& line) { warnings.push_back(line); });
  CHECK_FALSE(startup.selection.enabled);
  CHECK(startup.loader == nullptr);
  CHECK(startup.registry->names().empty());
  CHECK(warnings.size() == 2);
  CHECK(contains(warnings[0], "ignored without --enable-metrics"));
}

TEST_CASE("startup validation loads plugins and validates the selection", "[config]") {
  PluginDir plugins;
  plugins.add_plugin("unit_two_names.so");
  Options options;
  options.enable_metrics = true;
  options.reporters = {"unit-beta,prometheus"};
  PluginSearchOptions search;
  search.plugin_dirs = {plugins.str()};
  const MetricsStartup startup = load_metrics_startup(options, search, {});
  REQUIRE(startup.selection.outputs.size() == 1);
  CHECK(startup.selection.prometheus);
  // The plugin's validate turns {} into its defaults.
  CHECK(startup.selection.outputs[0].config == boost::json::parse(R"({"queue_size":100})"));
}

TEST_CASE("a selected plugin that is disabled causes an unknown-reporter error saying why",
          "[config]") {
  PluginDir plugins;
  const std::string path = plugins.add_plugin("unit_two_names.so");
  Options options;
  options.enable_metrics = true;
  options.reporters = {"unit_two_names"};
  PluginSearchOptions search;
  search.plugin_dirs = {plugins.str()};
  search.disabled_plugins = "unit_two_names";
  const StartupError error = startup_error([&] { load_metrics_startup(options, search, {}); });
  CHECK(contains(error.message(), "unknown reporter"));
  CHECK(contains(error.message(), path));
  CHECK(contains(error.message(), "disabled by TOKENSPEED_DISABLE_PLUGINS"));
}

TEST_CASE("a selected plugin that failed registration causes an unknown-reporter error saying why",
          "[config]") {
  PluginDir plugins;
  const std::string path = plugins.add_plugin("unit_fails_after_register.so");
  Options options;
  options.enable_metrics = true;
  options.reporters = {"unit_rollback"};
  PluginSearchOptions search;
  search.plugin_dirs = {plugins.str()};
  std::vector<std::string> warnings;
  const StartupError error = startup_error([&] {
    load_metrics_startup(options, search,
                         [&](const std::string& line) { warnings.push_back(line); });
  });
  CHECK(error.context().reporter == "unit_rollback");
  CHECK(contains(error.message(), "unknown reporter"));
  CHECK(contains(error.message(), path));
  CHECK(contains(error.message(), "deliberate failure after registering"));
  CHECK(warnings.size() == 1);
}

TEST_CASE("create_sink and start_node failures are error results, never exceptions",
          "[config][reporter]") {
  Reporter good(descriptor("good"), "t", "/t.so");
  created_sinks = 0;
  const CreateSinkResult sink = good.create_sink(boost::json::object{});
  CHECK(sink.ok);
  CHECK(sink.sink.vtable == &kSinkVtable);
  CHECK(created_sinks == 1);

  auto failing = descriptor("failing");
  failing.create_sink = failing_create_sink;
  const CreateSinkResult failed = Reporter(failing, "t", "/t.so").create_sink({});
  CHECK_FALSE(failed.ok);
  CHECK(failed.error == "create_sink failed: cannot open the spool");

  // Without start_node the normalized configuration is the producer configuration.
  const boost::json::object config{{"endpoint", "x"}};
  const StartNodeResult direct = good.start_node(config, std::chrono::seconds(1));
  CHECK(direct.ok);
  CHECK(direct.producer_config == config);

  auto node = descriptor("node");
  node.start_node = good_start_node;
  const StartNodeResult started =
      Reporter(node, "t", "/t.so").start_node(config, std::chrono::seconds(1));
  CHECK(started.ok);
  CHECK(started.producer_config == boost::json::parse(R"({"spool":"/run/x"})"));

  closed_sessions = 0;
  auto bad = descriptor("bad");
  bad.start_node = bad_start_node;
  const StartNodeResult rejected =
      Reporter(bad, "t", "/t.so").start_node(config, std::chrono::seconds(1));
  CHECK_FALSE(rejected.ok);
  CHECK(contains(rejected.error, "start_node did not return a JSON object"));
  CHECK(closed_sessions == 1);  // a returned session is closed
}

namespace {

boost::program_options::variables_map parse_flags(std::vector<std::string> args) {
  args.insert(args.begin(), "check");
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  boost::program_options::options_description description("options");
  tokenspeed::metrics::add_metrics_flags(description);
  return tokenspeed::metrics::parse_command_line(static_cast<int>(argv.size()), argv.data(),
                                                 description);
}

}  // namespace

TEST_CASE("the metrics flags parse into the options struct", "[config][cli]") {
  const Options options = tokenspeed::metrics::options_from_flags(parse_flags(
      {"--enable-metrics", "--metrics-reporters", "prometheus,jsonl", "--metrics-reporters=x",
       "--metrics-reporter-config", "/etc/m.json", "--metrics-plugin-dir", "/a",
       "--metrics-plugin-dir=/b", "--metrics-allow-insecure-plugins"}));
  CHECK(options.enable_metrics);
  CHECK(options.reporters == std::vector<std::string>{"prometheus,jsonl", "x"});
  CHECK(options.reporter_config == "/etc/m.json");
  CHECK(options.plugin_dirs == std::vector<std::string>{"/a", "/b"});
  CHECK(options.allow_insecure_plugins);

  const Options defaults = tokenspeed::metrics::options_from_flags(parse_flags({}));
  CHECK_FALSE(defaults.enable_metrics);
  CHECK(defaults.reporters.empty());
  CHECK(defaults.reporter_config.empty());
  CHECK(defaults.plugin_dirs.empty());
  CHECK_FALSE(defaults.allow_insecure_plugins);
}

TEST_CASE("unknown flags, missing values and stray arguments are startup errors", "[config][cli]") {
  const StartupError unknown = startup_error([] { parse_flags({"--enable-metric"}); });
  CHECK(unknown.context().key == "--enable-metric");
  CHECK(contains(unknown.message(), "unrecognised option"));
  CHECK_THROWS_AS(parse_flags({"--metrics-reporters"}), StartupError);
  CHECK_THROWS_AS(parse_flags({"stray"}), StartupError);
  CHECK_THROWS_AS(parse_flags({"--metrics-reporter-config", "a", "--metrics-reporter-config", "b"}),
                  StartupError);
}

TEST_CASE("a number outside its range is refused as the flag gave it, before it is narrowed",
          "[config][cli]") {
  const StartupError series = startup_error([] {
    tokenspeed::metrics::options_from_flags(parse_flags({"--metrics-max-series-per-family", "-5"}));
  });
  CHECK(series.context().key == "--metrics-max-series-per-family");
  CHECK(series.context().reporter == "prometheus");
  CHECK(series.message() == "-5 is outside 1-16777216");
  const StartupError port = startup_error(
      [] { tokenspeed::metrics::options_from_flags(parse_flags({"--metrics-port=4294967297"})); });
  CHECK(port.message() == "port 4294967297 is outside 0-65535");
}

TEST_CASE("check_options applies the defaults of every option not given", "[config][cli]") {
  Options given;
  given.enable_metrics = true;
  given.reporters = {"prometheus"};
  const MetricsSettings settings = check_options(given);
  CHECK(settings.given.enable_metrics);
  CHECK(settings.given.reporters == std::vector<std::string>{"prometheus"});
  CHECK(settings.queue_size == kDefaultQueueSize);
  CHECK(settings.shutdown_timeout == kDefaultShutdownTimeout);
  CHECK_FALSE(settings.host);
  CHECK_FALSE(settings.port);
  CHECK_FALSE(settings.multiproc_dir);
  CHECK(settings.max_series_per_family == kDefaultMaxSeriesPerFamily);
}

TEST_CASE("check_options accepts each range's ends and refuses past them, naming the flag",
          "[config][cli]") {
  Options ends;
  ends.queue_size = 2;
  ends.shutdown_timeout = std::chrono::duration<double>(0);
  ends.port = 0;
  ends.max_series_per_family = 1;
  CHECK(check_options(ends).queue_size == 2);
  CHECK(check_options(ends).shutdown_timeout == std::chrono::nanoseconds(0));
  CHECK(check_options(ends).port == 0);
  CHECK(check_options(ends).max_series_per_family == 1);
  ends.queue_size = std::size_t{1} << 24;
  ends.shutdown_timeout = std::chrono::duration<double>(3600);
  ends.port = 65535;
  ends.max_series_per_family = 16777216;
  ends.host = "::1";
  ends.multiproc_dir = "/run/tsm";
  const MetricsSettings settings = check_options(ends);
  CHECK(settings.shutdown_timeout == std::chrono::hours(1));
  CHECK(settings.port == 65535);
  CHECK(settings.host == "::1");
  CHECK(settings.multiproc_dir == std::filesystem::path("/run/tsm"));

  struct Case {
    std::function<void(Options&)> set;
    const char* key;
    const char* reporter;
    const char* message;
  };
  const std::vector<Case> cases{
      {[](Options& g) { g.queue_size = 1; }, "--metrics-reporter-queue-size", "",
       "must be between 2 and 16777216"},
      {[](Options& g) { g.queue_size = 16777217; }, "--metrics-reporter-queue-size", "",
       "must be between 2 and 16777216"},
      {[](Options& g) { g.shutdown_timeout = std::chrono::duration<double>(-0.5); },
       "--metrics-shutdown-timeout", "", "must be between 0 and 3600 seconds"},
      {[](Options& g) { g.shutdown_timeout = std::chrono::duration<double>(std::nan("")); },
       "--metrics-shutdown-timeout", "", "must be between 0 and 3600 seconds"},
      {[](Options& g) { g.host = ""; }, "--metrics-host", "prometheus",
       "the host must not be empty"},
      {[](Options& g) { g.port = 65536; }, "--metrics-port", "prometheus",
       "port 65536 is outside 0-65535"},
      {[](Options& g) { g.multiproc_dir = ""; }, "--metrics-multiproc-dir", "prometheus",
       "the directory must not be empty"},
      {[](Options& g) { g.max_series_per_family = 0; }, "--metrics-max-series-per-family",
       "prometheus", "0 is outside 1-16777216"},
  };
  for (const Case& each : cases) {
    Options given;
    each.set(given);
    const StartupError error = startup_error([&] { check_options(given); });
    CHECK(error.context().key == each.key);
    CHECK(error.context().reporter == each.reporter);
    CHECK(error.message() == each.message);
  }
}
