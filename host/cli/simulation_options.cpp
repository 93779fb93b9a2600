// simulation_options.cpp — declares and reads the simulation flags.
#include "cli/simulation_options.hpp"

#include <string>

#include "core/startup_error.hpp"

namespace tokenspeed::metrics::cli {

namespace po = boost::program_options;

void add_simulation_options(po::options_description& description) {
  const SimulationOptions defaults;
  description.add_options()("model", po::value<std::string>()->default_value(defaults.model_name),
                            "model_name label value")(
      "app-key", po::value<std::string>()->default_value(defaults.app_key), "app_key label value")(
      "request-rate", po::value<double>()->default_value(defaults.request_rate),
      "finished requests per second in the frontend")(
      "seed", po::value<std::uint64_t>()->default_value(defaults.seed), "random seed")(
      "iteration-ms", po::value<double>()->default_value(10.0),
      "mean duration of one scheduler iteration, in milliseconds")(
      "native-histograms", po::bool_switch(),
      "record the catalog's histograms with exponential buckets (Prometheus native "
      "histograms, OTLP exponential histograms)");
}

SimulationOptions simulation_options_from(const po::variables_map& values) {
  SimulationOptions options;
  options.model_name = values["model"].as<std::string>();
  options.app_key = values["app-key"].as<std::string>();
  options.request_rate = values["request-rate"].as<double>();
  if (!(options.request_rate >= 0) || options.request_rate > 1e6) {
    throw StartupError({"", "", "--request-rate"}, "must be between 0 and 1000000");
  }
  options.seed = values["seed"].as<std::uint64_t>();
  const double iteration_ms = values["iteration-ms"].as<double>();
  if (!(iteration_ms >= 0.01) || iteration_ms > 60'000) {
    throw StartupError({"", "", "--iteration-ms"}, "must be between 0.01 and 60000");
  }
  options.iteration_time =
      std::chrono::microseconds(static_cast<std::int64_t>(iteration_ms * 1000));
  options.native_histograms = values["native-histograms"].as<bool>();
  return options;
}

std::vector<std::string> simulation_arguments(const SimulationOptions& options) {
  std::vector<std::string> arguments{
      "--model",
      options.model_name,
      "--app-key",
      options.app_key,
      "--request-rate",
      std::to_string(options.request_rate),
      "--seed",
      std::to_string(options.seed),
      "--iteration-ms",
      std::to_string(static_cast<double>(options.iteration_time.count()) / 1000.0)};
  if (options.native_histograms) arguments.emplace_back("--native-histograms");
  return arguments;
}

}  // namespace tokenspeed::metrics::cli
