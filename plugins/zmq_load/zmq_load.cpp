// zmq_load.cpp — the zmq_load output: its settings table (read by validate,
// shown by `tokenspeed-metrics plugins`, matched by docs/plugins/zmq_load.md),
// the launcher's start-up check that the ports bind, create_sink and
// registration. Registration only declares factories.
// Tested in test/integration/zmq_load_feed.py, zmq_load_golden.py and
// zmq_load_engines.py.
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/kit/registration.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "zmq_load_sink.hpp"

namespace tokenspeed::metrics::zmq_load {
namespace {

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

constexpr Schema kSchemaChoices[] = {Schema::kLoadStat, Schema::kForwardPass};

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{{
      {"endpoint", SettingType::kString, "", 0, 0,
       "tcp://HOST:PORT the PUB socket binds; rank r binds PORT + r. Unauthenticated: bind an "
       "address only the router reaches."},
      kit::Setting("schema", SettingType::kChoice, R"("sglang_loadstat")", 0, 0,
                   "sglang_loadstat: SGLang's LoadStat (its router, llm-d); dynamo_fpm_v1: "
                   "Dynamo's ForwardPassMetrics (its planner and router).",
                   "sglang_loadstat|dynamo_fpm_v1")
          .bind_choices<kSchemaChoices, &ZmqLoadOptions::schema>(),
      {"preset", SettingType::kChoice, R"("tokenspeed")", 0, 0,
       "The engine whose families feed the fields.", "tokenspeed|vllm|sglang"},
      {"map", SettingType::kStringMap, "{}", 0, 0,
       "Field -> family, over the preset's (\"\" unmaps a field); fields as in the docs."},
      kit::Setting("rank_label", SettingType::kString, R"("dp_rank")", 0, 0,
                   "The label holding the rank (vLLM: engine); without it, the process's rank.")
          .bind<&ZmqLoadOptions::rank_label>(),
      kit::Setting(
          "heartbeat_ms", SettingType::kInteger, "1000", 10, 3600000,
          "An unchanged state is sent again this often (FPM with the fpm group: all zero).")
          .bind<&ZmqLoadOptions::heartbeat>(),
      kit::Setting("max_total_num_tokens", SettingType::kInteger, "0", 0, 1e15,
                   "The KV capacity in tokens when no family gives it; 0: unknown.")
          .bind<&ZmqLoadOptions::max_total_num_tokens>(),
      {"worker_id", SettingType::kString, R"("0")", 0, 0,
       "dynamo_fpm_v1: the worker_id sent, an unsigned 64-bit integer in decimal."},
      kit::Setting("require_full_fpm", SettingType::kBoolean, "false", 0, 0,
                   "dynamo_fpm_v1: refuse to start unless the whole fpm gauge group is mapped, "
                   "and never send counts-only messages.")
          .bind<&ZmqLoadOptions::require_full_fpm>(),
      kit::Setting("max_ranks", SettingType::kInteger, "64", 1, 4096,
                   "Ranks kept per process; a rank label beyond it is refused.")
          .bind<&ZmqLoadOptions::max_ranks>(),
      {"startup_ranks", SettingType::kInteger, "1", 0, 4096,
       "Ports (PORT to PORT + n - 1) the launcher checks bind at startup; 0: none."},
  }};
  return table;
}

uint64_t parse_worker_id(const std::string& text) {
  uint64_t value = 0;
  bool valid = !text.empty() && text.size() <= 20;
  for (const char c : text) {
    valid = valid && c >= '0' && c <= '9';
    const uint64_t digit = valid ? static_cast<uint64_t>(c - '0') : 0;
    valid = valid && value <= (UINT64_MAX - digit) / 10;
    if (valid) value = value * 10 + digit;
  }
  if (!valid)
    throw std::invalid_argument(
        "'worker_id' must be an unsigned 64-bit integer in decimal, got \"" + text + "\"");
  return value;
}

Preset preset_of(const std::string& name) {
  if (name == "vllm") return Preset::kVllm;
  if (name == "sglang") return Preset::kSglang;
  return Preset::kTokenspeed;
}

FieldMap field_map(const kit::Settings& settings) {
  FieldMap fields = FieldMap::preset(preset_of(settings.string("preset")));
  fields.override_with(settings.string_map("map"));
  return fields;
}

// The checks across keys, after the table's.
void check(kit::json::Value& settings) {
  const kit::Settings view(settings);
  parse_endpoint(view.string("endpoint"));
  parse_worker_id(view.string("worker_id"));
  const FieldMap fields = field_map(view);
  if (view.boolean("require_full_fpm")) {
    if (view.string("schema") != "dynamo_fpm_v1")
      throw std::invalid_argument("'require_full_fpm' needs \"schema\": \"dynamo_fpm_v1\"");
    if (!fields.fpm_group_complete())
      throw std::invalid_argument(
          "'require_full_fpm': the fpm gauge group and fpm_iterations are not all mapped");
  }
  if (view.string("rank_label").empty())
    throw std::invalid_argument("'rank_label' must not be empty");
}

// The launcher's session: the ports were free at startup.
struct PortsChecked {
  std::string config;
  std::string producer_config() const { return config; }
  void close(std::chrono::nanoseconds) {}
};

// Binds and releases the first startup_ranks ports: a port in use (an
// engine's KV-event range, another feed) is a startup error naming it.
std::unique_ptr<PortsChecked> start_node(std::string_view config, const plugin::Host&) {
  const kit::Settings settings(settings_table().validate(config));
  const Endpoint endpoint = parse_endpoint(settings.string("endpoint"));
  const auto ranks = static_cast<std::size_t>(settings.integer("startup_ranks"));
  ZmqPublisher probe(endpoint, ranks);
  for (std::size_t offset = 0; offset < ranks; ++offset) {
    const std::string why = probe.bind(offset);
    if (!why.empty()) throw std::runtime_error("'endpoint': " + why);
  }
  return std::make_unique<PortsChecked>(PortsChecked{std::string(config)});
}

std::unique_ptr<ZmqLoadSink> create_sink(const kit::Settings& settings, const plugin::Host& host) {
  ZmqLoadOptions options;
  settings_table().fill(settings, options);
  options.endpoint = parse_endpoint(settings.string("endpoint"));
  options.fields = field_map(settings);
  options.worker_id = parse_worker_id(settings.string("worker_id"));
  options.process_rank = host.process().rank;
  return std::make_unique<ZmqLoadSink>(std::move(options), host);
}

int register_zmq_load(const tsm_host_api* host, tsm_buffer* error) noexcept {
  return plugin::register_reporters(host, error, [](plugin::Registrar& registrar) {
    plugin::Reporter<ZmqLoadSink> base = kit::reporter_of(kit::Output<ZmqLoadSink>{
        "zmq_load", TSM_PLUGIN_VERSION, &settings_table(), check, create_sink});
    plugin::Reporter<ZmqLoadSink, PortsChecked> reporter;
    reporter.name = base.name;
    reporter.version = base.version;
    reporter.settings = base.settings;
    reporter.validate = base.validate;
    reporter.create_sink = base.create_sink;
    reporter.start_node = start_node;
    registrar.add(std::move(reporter));
  });
}

}  // namespace

// Registration (start_node checks the ports; each producer publishes itself).
extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  return register_zmq_load(host, error);
}

}  // namespace tokenspeed::metrics::zmq_load
