// simulation_options.hpp — the flags of the simulated engine shared by
// `simulate` (the launcher) and `producer` (what it spawns). Parsing only.
// Tested in test/cli/test_cli_usage.py.
#pragma once

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>

#include "simulator/engine_simulator.hpp"

namespace tokenspeed::metrics::cli {

// --model, --app-key, --request-rate, --seed, --iteration-ms, --native-histograms.
void add_simulation_options(boost::program_options::options_description& description);
// Throws StartupError naming the flag for a value out of range.
SimulationOptions simulation_options_from(const boost::program_options::variables_map& values);
// The same flags as arguments for a producer's command line.
std::vector<std::string> simulation_arguments(const SimulationOptions& options);

}  // namespace tokenspeed::metrics::cli
