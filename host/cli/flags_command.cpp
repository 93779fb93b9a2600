// flags_command.cpp — `tokenspeed-metrics flags`: the metrics flags as the
// table declares them, as help text or as the Markdown tables of
// docs/operators.md (which a test compares with the docs). Reads nothing else.
// Tested in test/cli/test_cli_usage.py.
#include <iostream>

#include <boost/program_options/options_description.hpp>

#include "config/metrics_flag_table.hpp"
#include "config/metrics_flags.hpp"

namespace tokenspeed::metrics::cli {

namespace po = boost::program_options;

// The docs' two tables: the flags of every command that starts metrics, and
// the built-in Prometheus output's.
constexpr FlagGroup kCommonFlags[] = {FlagGroup::selection, FlagGroup::plugin_search,
                                      FlagGroup::delivery};
constexpr FlagGroup kPrometheusFlags[] = {FlagGroup::prometheus};

int run_flags(int argc, char** argv) {
  po::options_description description("options");
  description.add_options()("help,h", "show this help")(
      "markdown", "print the flags as the Markdown tables of docs/operators.md");
  const po::variables_map values = parse_command_line(argc, argv, description);
  if (values.count("help") != 0) {
    std::cout << usage("flags", "[--markdown]", description)
              << "\nPrints every metrics flag with its default and meaning: the flags that\n"
                 "check and simulate accept and an engine takes out of its command line.\n";
  } else if (values.count("markdown") != 0) {
    std::cout << metrics_flags_markdown(kCommonFlags) << '\n'
              << metrics_flags_markdown(kPrometheusFlags);
  } else {
    std::cout << all_metrics_flags();
  }
  std::cout.flush();
  return std::cout ? 0 : 1;
}

}  // namespace tokenspeed::metrics::cli
