// otlp.cpp — the otlp output: its settings table (read by validate, shown by
// `tokenspeed-metrics plugins`, matched by docs/plugins/otlp.md), create_sink
// and registration. Registration only declares factories: no thread, no
// connection before create_sink.
#include <unistd.h>

#include <climits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "otlp_sink.hpp"

#ifndef TSM_OTLP_VERSION
#define TSM_OTLP_VERSION "0.0.0"
#endif

namespace tokenspeed::metrics::otlp {
namespace {

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{{
      {"endpoint", SettingType::kString, R"("http://127.0.0.1:4318/v1/metrics")", 0, 0,
       "OTLP/HTTP metrics URL (http:// or https://), the full path included."},
      {"headers", SettingType::kStringMap, "{}", 0, 0,
       "HTTP headers added to every request, e.g. {\"api-key\": \"...\"}."},
      {"timeout_ms", SettingType::kInteger, "10000", 1, 600000,
       "Bound of one export request; during close also bounded by close's budget."},
      {"export_interval_ms", SettingType::kInteger, "10000", 10, 3600000,
       "How often the state is exported."},
      {"resource_attributes", SettingType::kStringMap, R"({"service.name": "tokenspeed"})", 0, 0,
       "Resource attributes of every producer (service.name defaults to \"tokenspeed\"); "
       "service.instance.id, host.name and process.pid are set per process."},
      {"temporality", SettingType::kChoice, R"("cumulative")", 0, 0,
       "Aggregation temporality of Sums and Histograms.", "cumulative|delta"},
      {"compression", SettingType::kChoice, R"("gzip")", 0, 0, "Request body encoding.",
       "gzip|none"},
      {"max_data_points_per_request", SettingType::kInteger, "8192", 1, 1000000,
       "Data points in one request; more are split, and this many changed series export early."},
      {"max_series", SettingType::kInteger, "100000", 1, 10000000,
       "Series held per process; events of further series are dropped, counted and logged."},
      {"max_pending_requests", SettingType::kInteger, "64", 1, 100000,
       "Requests kept while the receiver does not take them (delta); beyond, the oldest is "
       "dropped."},
      {"initial_backoff_ms", SettingType::kInteger, "1000", 1, 600000,
       "First retry delay after a retryable failure; doubles per failure, with 20% jitter."},
      {"max_backoff_ms", SettingType::kInteger, "30000", 1, 3600000,
       "Longest retry delay (unless Retry-After asks for more, up to 5 minutes)."},
  }};
  return table;
}

kit::json::Value normalize(std::string_view config) {
  kit::json::Value settings = settings_table().validate(config);
  const std::string& endpoint = settings.at("endpoint").as_string();
  if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0) {
    throw std::invalid_argument("'endpoint' must start with http:// or https://, got \"" +
                                endpoint + "\"");
  }
  for (const auto& [name, value] : settings.at("headers").as_object()) {
    if (name.empty() || name.find_first_of(":\r\n ") != std::string::npos ||
        value.as_string().find_first_of("\r\n") != std::string::npos) {
      throw std::invalid_argument("'headers': '" + name + "' is not a valid header");
    }
  }
  for (const auto& member : settings.at("resource_attributes").as_object()) {
    if (member.first == "service.instance.id" || member.first == "process.pid") {
      throw std::invalid_argument("'resource_attributes': '" + member.first +
                                  "' is set per producer process and cannot be configured");
    }
  }
  if (settings.at("max_backoff_ms").as_integer() < settings.at("initial_backoff_ms").as_integer())
    throw std::invalid_argument("'max_backoff_ms' must be at least 'initial_backoff_ms'");
  return settings;
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

std::string validate(std::string_view config) { return kit::json::serialize(normalize(config)); }

std::unique_ptr<OtlpSink> create_sink(std::string_view producer_config, const plugin::Host& host) {
  const kit::Settings settings(normalize(producer_config));
  OtlpOptions options;
  options.endpoint = settings.string("endpoint");
  for (const auto& [name, value] : settings.string_map("headers")) {
    std::string header = name;
    header += ": ";
    header += value;
    options.headers.push_back(std::move(header));
  }
  options.gzip = settings.string("compression") == "gzip";

  const bool delta = settings.string("temporality") == "delta";
  options.aggregation.temporality =
      delta ? kit::Temporality::kDelta : kit::Temporality::kCumulative;
  options.aggregation.max_series = static_cast<std::size_t>(settings.integer("max_series"));
  options.aggregation.batch_points =
      static_cast<std::size_t>(settings.integer("max_data_points_per_request"));

  options.delivery.interval = std::chrono::milliseconds(settings.integer("export_interval_ms"));
  options.delivery.attempt_timeout = std::chrono::milliseconds(settings.integer("timeout_ms"));
  options.delivery.backoff.initial =
      std::chrono::milliseconds(settings.integer("initial_backoff_ms"));
  options.delivery.backoff.max = std::chrono::milliseconds(settings.integer("max_backoff_ms"));
  options.delivery.max_pending = static_cast<std::size_t>(settings.integer("max_pending_requests"));
  // A fresh cumulative collect supersedes what waited; delta data must not be lost.
  options.delivery.recollect_on_retry = !delta;

  bool service_name = false;
  for (auto& [key, value] : settings.string_map("resource_attributes")) {
    service_name = service_name || key == "service.name";
    options.encoder.resource_attributes.emplace_back(key, value);
  }
  if (!service_name) options.encoder.resource_attributes.emplace_back("service.name", "tokenspeed");
  const std::string host_id = host_name();
  const auto pid = static_cast<int64_t>(::getpid());
  // One resource per producer process: streams of two processes never collide.
  options.encoder.resource_attributes.emplace_back("service.instance.id",
                                                   host_id + "-" + std::to_string(pid));
  options.encoder.resource_attributes.emplace_back("host.name", host_id);
  options.encoder.process_id = pid;
  options.encoder.scope_version = TSM_OTLP_VERSION;
  options.encoder.max_points_per_request = options.aggregation.batch_points;
  return std::make_unique<OtlpSink>(std::move(options), host);
}

}  // namespace
}  // namespace tokenspeed::metrics::otlp

// -------------------------------------------------------------- registration

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  namespace plugin = tokenspeed::metrics::plugin;
  namespace otlp = tokenspeed::metrics::otlp;
  return plugin::register_reporters(host, error, [](plugin::Registrar& registrar) {
    plugin::Reporter<otlp::OtlpSink> reporter;
    reporter.name = "otlp";
    reporter.validate = otlp::validate;
    reporter.create_sink = otlp::create_sink;
    reporter.settings = otlp::settings_table().describe();
    registrar.add(std::move(reporter));  // start_node NULL: each producer exports itself
  });
}
