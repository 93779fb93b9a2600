// otlp.cpp — the otlp output: its settings table (read by validate, shown by
// `tokenspeed-metrics plugins`, matched by docs/plugins/otlp.md, the single
// source of its defaults), create_sink and registration. Registration only declares factories: no
// thread, no connection before create_sink.
// Tested in test/integration/otlp_agreement.py and
// test/integration/otlp_grpc.py (the output selected in `simulate`).
#include <unistd.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include <tokenspeed/kit/http_exporter.hpp>
#include <tokenspeed/kit/registration.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "otlp_sink.hpp"

namespace tokenspeed::metrics::otlp {
namespace {

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

// The values of the choices of protocol, temporality and compression, in their order.
constexpr bool kGrpcChoices[] = {false, true};
constexpr kit::Temporality kTemporalityChoices[] = {kit::Temporality::kCumulative,
                                                    kit::Temporality::kDelta};
constexpr bool kGzipChoices[] = {true, false};

// The keys the kit's checks and options read back from the table.
constexpr std::string_view kUrlKey = "endpoint";
constexpr std::string_view kIntervalKey = "export_interval_ms";

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{
      {
          kit::http_url_setting(
              kUrlKey, R"("http://127.0.0.1:4318/v1/metrics")",
              "OTLP/HTTP metrics URL (http:// or https://), the full path included; "
              "with protocol grpc the receiver's address without a path, e.g. "
              "\"http://127.0.0.1:4317\"."),
          kit::http_headers_setting(
              "HTTP headers added to every request, e.g. {\"api-key\": \"...\"}."),
          kit::http_timeout_setting(
              "10000", "Bound of one export request; during close also bounded by close's budget."),
          kit::Setting("protocol", SettingType::kChoice, R"("http/protobuf")", 0, 0,
                       "Transport: OTLP/HTTP with protobuf bodies, or OTLP/gRPC (HTTP/2, "
                       "MetricsService/Export at the endpoint).",
                       "http/protobuf|grpc")
              .bind_choices<kGrpcChoices, &OtlpOptions::grpc>(),
          {kIntervalKey, SettingType::kInteger, "10000", 10, 3600000,
           "How often the state is exported."},
          kit::Setting("resource_attributes", SettingType::kStringMap,
                       R"({"service.name": "tokenspeed"})", 0, 0,
                       "Resource attributes of every producer (service.name defaults to "
                       "\"tokenspeed\"); service.instance.id, host.name and process.pid are set "
                       "per process.")
              .bind<&OtlpOptions::encoder, &EncoderOptions::resource_attributes>(),
          kit::Setting("temporality", SettingType::kChoice, R"("cumulative")", 0, 0,
                       "Aggregation temporality of Sums, Histograms and ExponentialHistograms.",
                       "cumulative|delta")
              .bind_choices<kTemporalityChoices, &OtlpOptions::exporter,
                            &kit::HttpExporterOptions::aggregation,
                            &kit::AggregationOptions::temporality>(),
          kit::Setting("compression", SettingType::kChoice, R"("gzip")", 0, 0,
                       "Request body encoding.", "gzip|none")
              .bind_choices<kGzipChoices, &OtlpOptions::gzip>(),
          kit::Setting("max_data_points_per_request", SettingType::kInteger, "8192", 1, 1000000,
                       "Data points in one request; more are split, and this many changed series "
                       "export early.")
              .bind<&OtlpOptions::exporter, &kit::HttpExporterOptions::aggregation,
                    &kit::AggregationOptions::batch_points>(),
          kit::max_series_setting("100000")
              .bind<&OtlpOptions::exporter, &kit::HttpExporterOptions::aggregation,
                    &kit::AggregationOptions::max_series>(),
          kit::Setting("max_pending_requests", SettingType::kInteger, "64", 1, 100000,
                       "Requests kept while the receiver does not take them (delta); beyond, the "
                       "oldest is dropped.")
              .bind<&OtlpOptions::exporter, &kit::HttpExporterOptions::delivery,
                    &kit::DeliveryOptions::max_pending>(),
          kit::initial_backoff_setting("1000"),
          kit::max_backoff_setting("30000"),
      },
      kit::kHttpCredentialSettings};
  return table;
}

// The path of the OTLP/gRPC metrics call, after the endpoint.
constexpr std::string_view kGrpcExportPath =
    "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";

// The checks across keys, after the table's.
void check(kit::json::Value& settings) {
  // OTLP/HTTP keeps a query (a receiver may route or authorize by it);
  // gRPC carries none, and owns some headers (kit::check_grpc_settings).
  if (settings.at("protocol").as_string() == "grpc") {
    kit::check_grpc_settings(settings, kUrlKey);
  } else {
    kit::check_http_settings(settings, kUrlKey);
  }
  for (const auto& member : settings.at("resource_attributes").as_object()) {
    if (member.first == "service.instance.id" || member.first == "process.pid") {
      throw std::invalid_argument("'resource_attributes': '" + member.first +
                                  "' is set per producer process and cannot be configured");
    }
  }
  kit::check_backoff_settings(settings);
}

std::unique_ptr<OtlpSink> create_sink(const kit::Settings& settings, const plugin::Host& host) {
  OtlpOptions options;
  kit::HttpExporterOptions& exporter = options.exporter;
  exporter.http = kit::http_client_options(settings, kUrlKey);
  exporter.delivery = kit::delivery_options(settings, kIntervalKey);
  // After the two above, which replace the structs some rows are bound into.
  settings_table().fill(settings, options);
  if (options.grpc) {
    std::string& url = exporter.http.url;
    if (!url.empty() && url.back() == '/') url.pop_back();
    url += kGrpcExportPath;
    exporter.http.http2 = true;
  }

  // OTLP has ExponentialHistogram: a family with exponential buckets keeps them.
  exporter.aggregation.exponential_histograms = true;
  // A fresh cumulative collect supersedes what waited; delta data must not be lost.
  exporter.delivery.recollect_on_retry =
      exporter.aggregation.temporality == kit::Temporality::kCumulative;

  bool service_name = false;
  for (const auto& attribute : options.encoder.resource_attributes)
    service_name = service_name || attribute.first == "service.name";
  if (!service_name) options.encoder.resource_attributes.emplace_back("service.name", "tokenspeed");
  // One resource per process, named as the host names it (node and process):
  // streams of two processes never collide, and a restarted process
  // continues its own.
  const plugin::ProcessIdentity process = host.process();
  options.encoder.resource_attributes.emplace_back("service.instance.id",
                                                   process.node + "/" + process.name);
  options.encoder.resource_attributes.emplace_back("host.name", process.node);
  options.encoder.process_id = process.pid;
  options.encoder.scope_version = TSM_PLUGIN_VERSION;
  options.encoder.max_points_per_request = exporter.aggregation.batch_points;
  return std::make_unique<OtlpSink>(std::move(options), host);
}

}  // namespace

// Registration (start_node NULL: each producer exports itself).
TSM_KIT_REGISTER_OUTPUT(OtlpSink, "otlp", TSM_PLUGIN_VERSION, &settings_table(), check, create_sink)

}  // namespace tokenspeed::metrics::otlp
