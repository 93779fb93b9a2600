// metrics_startup.cpp — loads the plugins and resolves the selection at startup.
#include "config/metrics_startup.hpp"

namespace tokenspeed::metrics {

MetricsStartup load_metrics_startup(const Options& options,
                                    const std::function<void(const std::string&)>& warn) {
  return load_metrics_startup(
      options,
      PluginSearchOptions::from_environment(options.plugin_dirs, options.allow_insecure_plugins),
      warn);
}

MetricsStartup load_metrics_startup(const Options& options, const PluginSearchOptions& search,
                                    const std::function<void(const std::string&)>& warn) {
  MetricsStartup startup;
  startup.registry = std::make_unique<ReporterRegistry>();
  for (const std::string& line : ignored_flag_warnings(options)) {
    if (warn) warn(line);
  }
  if (!options.enable_metrics) {
    startup.selection.enabled = false;
    return startup;  // with metrics disabled, nothing is loaded or created
  }
  // Selection syntax errors are reported before any plugin is loaded.
  (void)parse_reporter_selection(options.reporters);
  startup.loader = std::make_unique<PluginLoader>(*startup.registry, warn);
  startup.loader->load(search);
  startup.selection = resolve_reporters(options, *startup.registry, startup.loader.get());
  if (options.metric_views) {
    startup.views = std::make_shared<const MetricViews>(read_metric_views(*options.metric_views));
    for (const std::string& line :
         unselected_output_warnings(*startup.views, startup.selection.order)) {
      if (warn) warn(line);
    }
  }
  for (const std::string& line : startup.selection.warnings) {
    if (warn) warn(line);
  }
  return startup;
}

}  // namespace tokenspeed::metrics
