// otel_views_driver.cpp — an engine of one process for otel_views_oracle.py:
// plays a recording script (the JSON test/otel_views_oracle/oracle.js reads)
// through the public API with the otlp output and a views file, then closes,
// so the output's last export holds every recording.
//   otel-views-driver SCRIPT VIEWS REPORTER_CONFIG OTLP_PLUGIN_DIR
// A recording's value is a decimal string, read with strtod: Boost.JSON 1.81
// rounds some decimals to a neighbouring double.
// Prints the shutdown table; exits 0 when the otlp output delivered every
// event and its plugin sent them, 1 otherwise, 2 on a startup error.
#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "tokenspeed/metrics/metrics.hpp"

namespace tsm = tokenspeed::metrics;

namespace {

boost::json::value read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return boost::json::parse(text.str());
}

std::vector<std::string> strings(const boost::json::value& list) {
  std::vector<std::string> out;
  for (const boost::json::value& item : list.as_array()) out.emplace_back(item.as_string().c_str());
  return out;
}

tsm::MetricDefinition definition(const boost::json::object& family) {
  tsm::MetricDefinition metric;
  metric.name = family.at("name").as_string().c_str();
  const std::string kind = family.at("kind").as_string().c_str();
  if (kind != "counter" && kind != "histogram") throw std::runtime_error("kind " + kind);
  metric.kind = kind == "counter" ? tsm::MetricKind::counter : tsm::MetricKind::histogram;
  metric.help = "Recorded by the views oracle test.";
  metric.label_names = strings(family.at("labels"));
  if (const boost::json::value* buckets = family.if_contains("buckets")) {
    for (const boost::json::value& bound : buckets->as_array())
      metric.buckets.push_back(bound.to_number<double>());
  }
  return metric;
}

void record(tsm::Recorder& recorder, const boost::json::value& script) {
  std::map<std::string, tsm::MetricDefinition> families;
  for (const boost::json::value& family : script.at("families").as_array()) {
    tsm::MetricDefinition metric = definition(family.as_object());
    families.emplace(metric.name, std::move(metric));
  }
  for (const boost::json::value& item : script.at("recordings").as_array()) {
    const boost::json::object& recording = item.as_object();
    const tsm::MetricDefinition& metric = families.at(recording.at("family").as_string().c_str());
    const std::vector<std::string> values = strings(recording.at("labels"));
    const std::vector<std::string_view> views(values.begin(), values.end());
    const std::span<const std::string_view> labels(views);
    const double value = std::strtod(recording.at("value").as_string().c_str(), nullptr);
    if (metric.kind == tsm::MetricKind::counter)
      recorder.counter(metric).labels(labels).inc(value);
    else
      recorder.histogram(metric).labels(labels).observe(value);
  }
}

bool delivered_everything(const tsm::ShutdownReport& report) {
  bool ok = report.closed_in_time && !report.outputs.empty();
  for (const tsm::OutputReport& output : report.outputs) {
    ok = ok && !output.failed && output.accepted == output.delivered &&
         output.plugin_sent == output.delivered && output.plugin_lost == 0 &&
         output.plugin_refused == 0;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: otel-views-driver SCRIPT VIEWS REPORTER_CONFIG OTLP_PLUGIN_DIR\n");
    return 2;
  }
  try {
    tsm::Options options;
    options.enable_metrics = true;
    options.reporters = {"otlp"};
    options.metric_views = argv[2];
    options.reporter_config = argv[3];
    options.plugin_dirs = {argv[4]};
    tsm::Launcher launcher(options);
    record(launcher.recorder(), read_json(argv[1]));
    const tsm::ShutdownReport report = launcher.close();
    std::cout << report.table << std::flush;
    return delivered_everything(report) ? 0 : 1;
  } catch (const tsm::StartupError& error) {
    std::fprintf(stderr, "otel-views-driver: %s\n", error.what());
    return tsm::kStartupErrorExitStatus;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "otel-views-driver: %s\n", error.what());
    return 1;
  }
}
