/*
 * tokenspeed/kit/registration.hpp — tsm_register of a plugin whose outputs
 * are each described by a kit::SettingsTable: validate is the table's check
 * plus the output's own cross-key checks, create_sink gets the typed
 * settings, and `tokenspeed-metrics plugins` shows the table and the
 * plugin's version. The whole registration of a shipped plugin:
 *
 *   // in the plugin's namespace, after its unnamed one:
 *   TSM_KIT_REGISTER_OUTPUT(MySink, "my_output", TSM_PLUGIN_VERSION, &settings_table(), check,
 *                           create_sink)
 *
 * defines tsm_register as kit::register_output<MySink>(host, error, {...}).
 *
 * TSM_PLUGIN_VERSION is the plugin's version, defined by its build (the
 * shipped plugins get meson.project_version() from plugins/meson.build).
 * Header-only C++17; Registration only declares factories.
 */
#ifndef TOKENSPEED_KIT_REGISTRATION_HPP
#define TOKENSPEED_KIT_REGISTRATION_HPP

#include <tokenspeed/kit/json.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace tokenspeed::metrics::kit {

/* One output name of a plugin, described by its settings table. */
template <class Sink>
struct Output {
  std::string name;     // 1-64 characters of [a-z0-9_.-]
  std::string version;  // the plugin's version, shown by `tokenspeed-metrics plugins`
  const SettingsTable* settings = nullptr;  // required; outlives the process' use of it
  /* Checks that involve several keys, run on what the table validated (every
   * key present); may rewrite a value (a path made absolute). Throws
   * std::invalid_argument naming the key. Optional. */
  std::function<void(json::Value& settings)> check;
  /* Builds the process-local sink from the checked settings. Required. */
  std::function<std::unique_ptr<Sink>(const Settings& settings, const plugin::Host& host)>
      create_sink;
};

/* The table's validation, then output.check: the normalized settings. */
template <class Sink>
json::Value checked_settings(const Output<Sink>& output, std::string_view config) {
  json::Value settings = output.settings->validate(config);
  if (output.check) output.check(settings);
  return settings;
}

/* The plugin::Reporter of an output (start_node NULL: each producer sends
 * its own data). Throws std::invalid_argument without a table or create_sink. */
template <class Sink>
plugin::Reporter<Sink> reporter_of(Output<Sink> output) {
  if (output.settings == nullptr || !output.create_sink)
    throw std::invalid_argument("output '" + output.name + "' needs settings and create_sink");
  auto shared = std::make_shared<const Output<Sink>>(std::move(output));
  plugin::Reporter<Sink> reporter;
  reporter.name = shared->name;
  reporter.version = shared->version;
  reporter.settings = shared->settings->describe();
  reporter.validate = [shared](std::string_view config) {
    return json::serialize(checked_settings(*shared, config));
  };
  reporter.create_sink = [shared](std::string_view producer_config, const plugin::Host& host) {
    // Checked again: the producer configuration crossed a process boundary.
    return shared->create_sink(Settings(checked_settings(*shared, producer_config)), host);
  };
  return reporter;
}

/* The body of tsm_register for a plugin of one output. */
template <class Sink>
int register_output(const tsm_host_api* host, tsm_buffer* error, Output<Sink> output) noexcept {
  return plugin::register_reporters(host, error, [&output](plugin::Registrar& registrar) {
    registrar.add(reporter_of(std::move(output)));
  });
}

}  // namespace tokenspeed::metrics::kit

/* Defines tsm_register for a plugin of one output: the arguments are the
 * sink type and the fields of its kit::Output. Use it outside an unnamed
 * namespace (the function must be exported). */
#define TSM_KIT_REGISTER_OUTPUT(Sink, ...)                                                \
  extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {   \
    return ::tokenspeed::metrics::kit::register_output<Sink>(host, error, {__VA_ARGS__}); \
  }

#endif  // TOKENSPEED_KIT_REGISTRATION_HPP
