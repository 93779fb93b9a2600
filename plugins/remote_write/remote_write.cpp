// remote_write.cpp — the remote_write output: its settings table (read by
// validate, shown by `tokenspeed-metrics plugins`, matched by
// docs/plugins/remote_write.md), create_sink and registration. Registration
// only declares factories: no thread, no connection before create_sink.
#include <unistd.h>

#include <climits>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "remote_write_naming.hpp"
#include "remote_write_sink.hpp"

namespace tokenspeed::metrics::remote_write {
namespace {

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{{
      {"url", SettingType::kString, R"("http://127.0.0.1:9090/api/v1/write")", 0, 0,
       "Remote-write URL (http:// or https://), the full path included."},
      {"headers", SettingType::kStringMap, "{}", 0, 0,
       "HTTP headers added to every request, e.g. {\"Authorization\": \"Bearer ...\"}."},
      {"timeout_ms", SettingType::kInteger, "10000", 1, 600000,
       "Bound of one write request; during close also bounded by close's budget."},
      {"push_interval_ms", SettingType::kInteger, "10000", 10, 3600000,
       "How often every series is pushed (one timestamp per push)."},
      {"external_labels", SettingType::kStringMap, "{}", 0, 0,
       "Labels added to every series, e.g. {\"cluster\": \"eu-1\"}; a label of the metric "
       "of the same name wins."},
      {"process_label", SettingType::kString, R"("process")", 0, 0,
       "Label that tells producer processes apart (value <host>-<pid>); sum it away with "
       "sum without (process) (...)."},
      {"max_samples_per_request", SettingType::kInteger, "2000", 1, 1000000,
       "Samples in one request; more are split."},
      {"max_series", SettingType::kInteger, "100000", 1, 10000000,
       "Series held per process; events of further series are dropped, counted and logged."},
      {"retry_on_429", SettingType::kBoolean, "false", 0, 0,
       "Retry a 429 Too Many Requests with backoff (as Prometheus, off: it is dropped)."},
      {"initial_backoff_ms", SettingType::kInteger, "30", 1, 600000,
       "First retry delay after a retryable failure; doubles per failure, with 20% jitter."},
      {"max_backoff_ms", SettingType::kInteger, "5000", 1, 3600000,
       "Longest retry delay (unless Retry-After asks for more, up to 5 minutes)."},
  }};
  return table;
}

kit::json::Value normalize(std::string_view config) {
  kit::json::Value settings = settings_table().validate(config);
  const std::string& url = settings.at("url").as_string();
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
    throw std::invalid_argument("'url' must start with http:// or https://, got \"" + url + "\"");
  for (const auto& [name, value] : settings.at("headers").as_object()) {
    if (name.empty() || name.find_first_of(":\r\n ") != std::string::npos ||
        value.as_string().find_first_of("\r\n") != std::string::npos) {
      throw std::invalid_argument("'headers': '" + name + "' is not a valid header");
    }
  }
  const std::string& process_label = settings.at("process_label").as_string();
  if (!valid_label_name(process_label)) {
    throw std::invalid_argument("'process_label': \"" + process_label +
                                "\" is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, no \"__\" prefix)");
  }
  for (const auto& member : settings.at("external_labels").as_object()) {
    if (!valid_label_name(member.first)) {
      throw std::invalid_argument("'external_labels': '" + member.first +
                                  "' is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, no \"__\" "
                                  "prefix)");
    }
    if (member.first == process_label) {
      throw std::invalid_argument("'external_labels': '" + member.first +
                                  "' is the process_label, set per producer process");
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

std::unique_ptr<RemoteWriteSink> create_sink(std::string_view producer_config,
                                             const plugin::Host& host) {
  const kit::Settings settings(normalize(producer_config));
  RemoteWriteOptions options;
  options.url = settings.string("url");
  for (const auto& [name, value] : settings.string_map("headers")) {
    std::string header = name;
    header += ": ";
    header += value;
    options.headers.push_back(std::move(header));
  }
  options.retry_on_429 = settings.boolean("retry_on_429");

  options.aggregation.temporality = kit::Temporality::kCumulative;
  options.aggregation.max_series = static_cast<std::size_t>(settings.integer("max_series"));

  options.delivery.interval = std::chrono::milliseconds(settings.integer("push_interval_ms"));
  options.delivery.attempt_timeout = std::chrono::milliseconds(settings.integer("timeout_ms"));
  options.delivery.backoff.initial =
      std::chrono::milliseconds(settings.integer("initial_backoff_ms"));
  options.delivery.backoff.max = std::chrono::milliseconds(settings.integer("max_backoff_ms"));
  // Cumulative samples: a fresh push supersedes whatever waited.
  options.delivery.recollect_on_retry = true;

  for (auto& [name, value] : settings.string_map("external_labels"))
    options.encoder.constant_labels.emplace_back(name, value);
  // One label value per producer process: two processes never push the same series.
  options.encoder.process_label = {settings.string("process_label"),
                                   host_name() + "-" + std::to_string(::getpid())};
  options.encoder.max_samples_per_request =
      static_cast<std::size_t>(settings.integer("max_samples_per_request"));
  return std::make_unique<RemoteWriteSink>(std::move(options), host);
}

}  // namespace
}  // namespace tokenspeed::metrics::remote_write

// -------------------------------------------------------------- registration

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  namespace plugin = tokenspeed::metrics::plugin;
  namespace rw = tokenspeed::metrics::remote_write;
  return plugin::register_reporters(host, error, [](plugin::Registrar& registrar) {
    plugin::Reporter<rw::RemoteWriteSink> reporter;
    reporter.name = "remote_write";
    reporter.validate = rw::validate;
    reporter.create_sink = rw::create_sink;
    reporter.settings = rw::settings_table().describe();
    registrar.add(std::move(reporter));  // start_node NULL: each producer pushes its own series
  });
}
