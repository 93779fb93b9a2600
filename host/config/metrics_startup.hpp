// metrics_startup.hpp — startup with metrics enabled: the flags' warnings, the
// plugins loaded and the selection resolved against them. The one place
// startup loads plugins; the selection's rules are in reporter_config.hpp.
// Tested in test/unit/config/reporter_config_test.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "config/metric_views.hpp"
#include "config/reporter_config.hpp"
#include "plugin/plugin_loader.hpp"
#include "plugin/reporter_registry.hpp"

namespace tokenspeed::metrics {

// The registry, the loaded plugins and the validated selection of one process.
// Threading: built and read on the startup thread; the registry and loader
// must live as long as any Reporter pointer in selection is used.
struct MetricsStartup {
  std::unique_ptr<ReporterRegistry> registry;
  std::unique_ptr<PluginLoader> loader;  // null when metrics are disabled
  ReporterSelection selection;
  // The views of --metrics-views, read and checked; null when none (or
  // metrics are disabled).
  std::shared_ptr<const MetricViews> views;
};

// Startup with metrics: warns about ignored flags, and with
// metrics enabled loads the plugins (search options from the flags and the
// environment) and resolves the selection (then says its warnings). With
// metrics disabled nothing is loaded. Warnings go to warn, one line each.
// Throws StartupError.
MetricsStartup load_metrics_startup(const Options& options,
                                    const std::function<void(const std::string&)>& warn);

// Same, with explicit plugin search options (tests).
MetricsStartup load_metrics_startup(const Options& options, const PluginSearchOptions& search,
                                    const std::function<void(const std::string&)>& warn);

}  // namespace tokenspeed::metrics
