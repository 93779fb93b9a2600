// remote_write.cpp — the remote_write output: its settings table (read by
// validate, shown by `tokenspeed-metrics plugins`, matched by
// docs/plugins/remote_write.md, the single source of its defaults),
// create_sink and registration. Registration
// only declares factories: no thread, no connection before create_sink.
// Tested in test/integration/remote_write_agreement.py (the output selected
// in `simulate`).
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/kit/http_exporter.hpp>
#include <tokenspeed/kit/registration.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "remote_write_naming.hpp"
#include "remote_write_sink.hpp"

namespace tokenspeed::metrics::remote_write {
namespace {

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

// The keys the kit's checks and options read back from the table.
constexpr std::string_view kUrlKey = "url";
constexpr std::string_view kIntervalKey = "push_interval_ms";

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{
      {
          kit::http_url_setting(kUrlKey, R"("http://127.0.0.1:9090/api/v1/write")",
                                "Remote-write URL (http:// or https://), the full path included."),
          kit::http_headers_setting(
              "HTTP headers added to every request, e.g. {\"Authorization\": \"Bearer ...\"}."),
          kit::http_timeout_setting(
              "10000", "Bound of one write request; during close also bounded by close's budget."),
          {kIntervalKey, SettingType::kInteger, "10000", 10, 3600000,
           "How often every series is pushed (one timestamp per push)."},
          kit::Setting("external_labels", SettingType::kStringMap, "{}", 0, 0,
                       "Labels added to every series, e.g. {\"cluster\": \"eu-1\"}; a label of "
                       "the metric of the same name wins.")
              .bind<&RemoteWriteOptions::encoder, &EncoderOptions::constant_labels>(),
          {"process_label", SettingType::kString, R"("process")", 0, 0,
           "Label that tells the processes of a node apart (value: the host's name of the process, "
           "e.g. scheduler-0); sum it away with sum without (process) (...)."},
          {"node_label", SettingType::kString, R"("node")", 0, 0,
           "Label that tells nodes apart (value: --metrics-node-name, else the host name); an "
           "external_labels entry of the same name replaces it; \"\": none."},
          kit::Setting("max_samples_per_request", SettingType::kInteger, "2000", 1, 1000000,
                       "Samples in one request (a native histogram is one); more are split.")
              .bind<&RemoteWriteOptions::encoder, &EncoderOptions::max_samples_per_request>(),
          kit::Setting("native_histograms", SettingType::kBoolean, "true", 0, 0,
                       "Send histograms with exponential buckets as native histogram samples "
                       "(the receiver must take them); false: as classic _bucket/_sum/_count "
                       "series in their declared bounds.")
              .bind<&RemoteWriteOptions::exporter, &kit::HttpExporterOptions::aggregation,
                    &kit::AggregationOptions::exponential_histograms>(),
          kit::max_series_setting("100000")
              .bind<&RemoteWriteOptions::exporter, &kit::HttpExporterOptions::aggregation,
                    &kit::AggregationOptions::max_series>(),
          kit::Setting("retry_on_429", SettingType::kBoolean, "false", 0, 0,
                       "Retry a 429 Too Many Requests with backoff (as Prometheus, off: it is "
                       "dropped).")
              .bind<&RemoteWriteOptions::retry_on_429>(),
          kit::initial_backoff_setting("30"),
          kit::max_backoff_setting("5000"),
      },
      kit::kHttpCredentialSettings};
  return table;
}

// The checks across keys, after the table's.
void check(kit::json::Value& settings) {
  kit::check_http_settings(settings, kUrlKey);
  const std::string& process_label = settings.at("process_label").as_string();
  if (!valid_label_name(process_label)) {
    throw std::invalid_argument(
        "'process_label': \"" + process_label +
        "\" is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, no \"__\" prefix)");
  }
  const std::string& node_label = settings.at("node_label").as_string();
  if (!node_label.empty() && !valid_label_name(node_label)) {
    throw std::invalid_argument(
        "'node_label': \"" + node_label +
        "\" is not a label name ([a-zA-Z_][a-zA-Z0-9_]*, no \"__\" prefix)");
  }
  if (node_label == process_label)
    throw std::invalid_argument("'node_label' and 'process_label' must differ");
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
  kit::check_backoff_settings(settings);
}

std::unique_ptr<RemoteWriteSink> create_sink(const kit::Settings& settings,
                                             const plugin::Host& host) {
  RemoteWriteOptions options;
  kit::HttpExporterOptions& exporter = options.exporter;
  exporter.http = kit::http_client_options(settings, kUrlKey);
  exporter.delivery = kit::delivery_options(settings, kIntervalKey);
  // After the two above, which replace the structs some rows are bound into.
  settings_table().fill(settings, options);

  exporter.aggregation.temporality = kit::Temporality::kCumulative;
  // Cumulative samples: a fresh push supersedes whatever waited.
  exporter.delivery.recollect_on_retry = true;

  // One label value per process and node (the host names both): two
  // processes never push the same series, and a restarted process continues
  // its own series rather than leaving a stale copy beside a new one.
  const plugin::ProcessIdentity process = host.process();
  // An external label of the same name names the node as the operator wants.
  const std::string& node_label = settings.string("node_label");
  const bool named_by_operator =
      std::any_of(options.encoder.constant_labels.begin(), options.encoder.constant_labels.end(),
                  [&](const auto& label) { return label.first == node_label; });
  if (!node_label.empty() && !named_by_operator)
    options.encoder.constant_labels.emplace_back(node_label, process.node);
  options.encoder.process_label = {settings.string("process_label"), process.name};
  return std::make_unique<RemoteWriteSink>(std::move(options), host);
}

}  // namespace

// Registration (start_node NULL: each producer pushes its own series).
TSM_KIT_REGISTER_OUTPUT(RemoteWriteSink, "remote_write", TSM_PLUGIN_VERSION, &settings_table(),
                        check, create_sink)

}  // namespace tokenspeed::metrics::remote_write
