// metrics_flag_table.hpp — the metrics flags, written once: each flag's name,
// the field of Options its value lands in (whose type says the flag's kind),
// its default, its range and its texts. The parser and the help
// (metrics_flags.hpp), Options::to_flags(), the environment's variables and
// the flag tables of docs/operators.md are all made from this table; nothing
// else lists the flags. Data and its rendering only; never parses.
// Tested in test/unit/config/metrics_flag_table_test.cpp.
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "core/delivery_defaults.hpp"
#include "core/endpoint_defaults.hpp"
#include "core/series_bound.hpp"
#include "core/startup_error.hpp"
#include "tokenspeed/metrics/options.hpp"

namespace tokenspeed::metrics {

// Which flags a command declares: check and simulate all of them, plugins
// only the plugin search.
enum class FlagGroup { selection, plugin_search, delivery, prometheus };
inline constexpr FlagGroup kAllFlagGroups[] = {FlagGroup::selection, FlagGroup::plugin_search,
                                               FlagGroup::delivery, FlagGroup::prometheus};

// Where a flag's value lands. The field's type is the flag's kind: a switch
// (bool), a repeatable flag (each value, in order), text ("" or empty when
// not given), a whole number (parsed as a long long, so a negative value is
// reported as typed) or seconds.
using OptionsField =
    std::variant<bool Options::*, std::vector<std::string> Options::*, std::string Options::*,
                 std::optional<std::string> Options::*, std::optional<std::size_t> Options::*,
                 std::optional<int> Options::*,
                 std::optional<std::chrono::duration<double>> Options::*>;

// The value a flag has when not given, as the help shows it.
using FlagDefault = std::variant<std::monostate, long long, double, std::string_view>;

// The values a number may take, and the message of one outside them ("{}"
// stands for the value as given).
struct FlagRange {
  double min;
  double max;
  std::string_view message;
};

struct MetricsFlag;
// A rule of one flag's text beyond its kind, throwing StartupError keyed by
// key (the flag, or the variable that stands for it).
using FlagTextCheck = void (*)(const MetricsFlag& flag, const std::string& key,
                               const std::string& value);

// One flag. A row names only what it has: a switch no value name, a flag
// without a value default no default_value (its docs' words instead), a
// flag without a range no range.
struct MetricsFlag {
  std::string_view name{};        // without the leading "--"
  std::string_view value_name{};  // what the docs call its value; "" for a switch
  FlagGroup group = FlagGroup::selection;
  OptionsField field{};
  FlagDefault default_value{};      // applied by check_options; shown by the help
  std::string_view default_text{};  // the docs' default when it has no default_value
  std::optional<FlagRange> range{};
  // Text that, when given, must not be empty: the message of an empty one.
  std::string_view empty_message{};
  FlagTextCheck check = nullptr;  // a further rule of its text, when it has one
  // A list's separator in its environment variable (':' as in PATH); 0: the
  // variable is one value.
  char list_separator = 0;
  std::string_view help{};     // the one line of --help
  std::string_view meaning{};  // the docs' table
};

inline constexpr std::size_t kMinQueueSize = 2;
inline constexpr std::size_t kMaxQueueSize = std::size_t{1} << 24;
inline constexpr double kMaxShutdownSeconds = 3600;

// --metrics-node-name: a label value, a resource attribute and a tag alike,
// so printable ASCII without the characters a back end's syntax takes apart.
void check_node_name(const MetricsFlag& flag, const std::string& key, const std::string& value);

// In the order of the help and the docs.
inline constexpr MetricsFlag kMetricsFlags[] = {
    {.name = "enable-metrics",
     .group = FlagGroup::selection,
     .field = &Options::enable_metrics,
     .default_text = "off",
     .help = "enable metrics (Prometheus only unless --metrics-reporters selects outputs)",
     .meaning = "Turn metrics on. Without any `--metrics-reporters`, selects Prometheus only."},
    {.name = "metrics-reporters",
     .value_name = "NAME",
     .group = FlagGroup::selection,
     .field = &Options::reporters,
     .default_text = "`prometheus`",
     .help = "select an output by name (repeatable; a comma-separated list is accepted); "
             "'prometheus' is the built-in output",
     .meaning = "Select an output by its registered name. Repeatable; a comma-separated list "
                "(`--metrics-reporters prometheus,jsonl`) is accepted too. `prometheus` selects "
                "the built-in output."},
    {.name = "metrics-reporter-config",
     .value_name = "FILE",
     .group = FlagGroup::selection,
     .field = &Options::reporter_config,
     .default_text = "none",
     .help = "JSON file mapping external output names to their settings",
     .meaning = "A JSON file with the settings of the external outputs (below)."},
    {.name = "metrics-plugin-dir",
     .value_name = "DIR",
     .group = FlagGroup::plugin_search,
     .field = &Options::plugin_dirs,
     .default_text = "none",
     .list_separator = ':',
     .help = "search DIR for plugin files before TOKENSPEED_PLUGIN_PATH and the installed "
             "directory (repeatable)",
     .meaning = "Search `DIR` for plugin files, before `TOKENSPEED_PLUGIN_PATH` and the "
                "installed directory. Repeatable; earlier directories come first."},
    {.name = "metrics-allow-insecure-plugins",
     .group = FlagGroup::plugin_search,
     .field = &Options::allow_insecure_plugins,
     .default_text = "off",
     .help = "load plugins from files or directories that other users can write to "
             "(development only)",
     .meaning = "Load plugins from directories or files that fail the security check "
                "(development only)."},
    {.name = "metrics-reporter-queue-size",
     .value_name = "N",
     .group = FlagGroup::delivery,
     .field = &Options::queue_size,
     .default_value = static_cast<long long>(kDefaultQueueSize),
     .range = FlagRange{kMinQueueSize, kMaxQueueSize, "must be between 2 and 16777216"},
     .help = "events each collector thread may queue per output before dropping (and "
             "counting) them",
     .meaning = "Ring capacity, in events, per collector thread per external output "
                "(2-16777216). A full ring drops the event and counts it; memory stays bounded "
                "at threads x outputs x N x 48 bytes (x 32 for a power of two such as the "
                "default)."},
    {.name = "metrics-shutdown-timeout",
     .value_name = "S",
     .group = FlagGroup::delivery,
     .field = &Options::shutdown_timeout,
     .default_value = std::chrono::duration<double>(kDefaultShutdownTimeout).count(),
     .range = FlagRange{0, kMaxShutdownSeconds, "must be between 0 and 3600 seconds"},
     .help = "seconds the whole node has to drain and close its outputs at shutdown",
     .meaning = "The node's shutdown budget in seconds (0-3600): producers drain within three "
                "quarters of it, the launcher's own sinks and the node sessions within the "
                "rest."},
    {.name = "metrics-node-name",
     .value_name = "NAME",
     .group = FlagGroup::delivery,
     .field = &Options::node_name,
     .default_text = "the host name",
     .check = &check_node_name,
     .help = "the node's name in what the outputs push (remote_write's node label, OTLP's "
             "service.instance.id); default: the host name",
     .meaning = "The node's name in what the outputs push (`remote_write`'s `node` label, "
                "OTLP's `service.instance.id` and `host.name`, `statsd`'s `node` tag): 1-253 "
                "printable ASCII characters without space, `/`, `,`, quotes or backslash. Set "
                "it in a container, whose host name changes with every start."},
    {.name = "metrics-views",
     .value_name = "FILE",
     .group = FlagGroup::delivery,
     .field = &Options::metric_views,
     .default_text = "none (every family as the engine defines it)",
     .empty_message = "the file name must not be empty",
     .help = "JSON or YAML file of views: change a family's buckets, name, help, labels or "
             "outputs, or drop it, without touching the engine",
     .meaning = "A JSON or YAML file of views (YAML when its name ends in `.yaml` or `.yml`): "
                "select families by name or glob and change their buckets (classic or "
                "exponential), name, help, labels, the outputs that receive them, or drop them, "
                "in every process alike ([views.md](views.md))."},
    {.name = "metrics-host",
     .value_name = "ADDR",
     .group = FlagGroup::prometheus,
     .field = &Options::host,
     .default_value = kDefaultMetricsHost,
     .empty_message = "the host must not be empty",
     .help = "address the Prometheus /metrics endpoint listens on",
     .meaning = "Address the endpoint listens on (an IP address or a resolvable name). "
                "Loopback by default; use `0.0.0.0` (or the node's address) for a Prometheus "
                "server on another machine."},
    {.name = "metrics-port",
     .value_name = "PORT",
     .group = FlagGroup::prometheus,
     .field = &Options::port,
     .default_value = static_cast<long long>(kDefaultMetricsPort),
     .range = FlagRange{0, 65535, "port {} is outside 0-65535"},
     .help = "port of the Prometheus /metrics endpoint; 0 picks a free port and prints it",
     .meaning = "Port of the endpoint. `0` picks a free port; the launcher prints the bound "
                "address. 9431 is clear of the exporters usually found on GPU nodes "
                "(node_exporter 9100, DCGM 9400, Prometheus 9090)."},
    {.name = "metrics-multiproc-dir",
     .value_name = "DIR",
     .group = FlagGroup::prometheus,
     .field = &Options::multiproc_dir,
     .default_text = "`$TMPDIR/tokenspeed-metrics-<uid>` (`/tmp/...` without `TMPDIR`)",
     .empty_message = "the directory must not be empty",
     .help = "base directory for the per-run directory of producer metric files (default "
             "$TMPDIR/tokenspeed-metrics-<uid>)",
     .meaning = "Base directory of the per-run directories holding the producers' files."},
    {.name = "metrics-max-series-per-family",
     .value_name = "N",
     .group = FlagGroup::prometheus,
     .field = &Options::max_series_per_family,
     .default_value = static_cast<long long>(kDefaultMaxSeriesPerFamily),
     .range = FlagRange{1, kMaxSeriesPerFamilyLimit, "{} is outside 1-16777216"},
     .help = "series one metric family may hold in each process (1-16777216); a new label set "
             "past it records nothing and is counted in tokenspeed_metrics_series_refused_total",
     .meaning = "Series one metric family may hold in each process (1-16777216); a new label "
                "set past it records nothing and is counted "
                "([below](#a-bound-on-series-per-family))."},
    {.name = "metrics-web-config",
     .value_name = "FILE",
     .group = FlagGroup::prometheus,
     .field = &Options::web_config,
     .default_text = "none (plain HTTP, no authentication)",
     .empty_message = "the file name must not be empty",
     .help = "web configuration file of the /metrics endpoint (TLS, client certificates, "
             "basic-auth users, response headers), in the format of Prometheus exporters' "
             "--web.config.file; reloaded when it changes",
     .meaning = "TLS, client certificates, basic-auth users, response headers and a rate limit "
                "for the endpoint, in the web configuration format of Prometheus's exporters; "
                "reloaded when it changes ([Securing the endpoint](#securing-the-endpoint))."},
};

// The row of a flag ("--metrics-port" or "metrics-port"); null for none.
const MetricsFlag* find_metrics_flag(std::string_view flag);

// The row whose value lands in field: metrics_flag(&Options::port). Found
// while compiling, so a field without a row does not build.
template <typename Value>
consteval const MetricsFlag& metrics_flag(Value Options::*field) {
  // By index and holds_alternative: std::get_if's null test of a global's
  // address is no constant expression in a sanitizer build of GCC.
  using Field = Value Options::*;
  for (std::size_t i = 0; i < std::size(kMetricsFlags); ++i) {
    const OptionsField& held = kMetricsFlags[i].field;
    if (std::holds_alternative<Field>(held) && std::get<Field>(held) == field) {
      return kMetricsFlags[i];
    }
  }
  throw "no row of kMetricsFlags lands in this field of Options";
}

// The row's default_value as T (a number, seconds or text); T{} without one.
template <typename T>
constexpr T flag_default(const MetricsFlag& flag) {
  if (const auto* number = std::get_if<long long>(&flag.default_value)) {
    if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(*number);
  } else if (const auto* seconds = std::get_if<double>(&flag.default_value)) {
    if constexpr (std::is_arithmetic_v<T>) return static_cast<T>(*seconds);
  } else if (const auto* text = std::get_if<std::string_view>(&flag.default_value)) {
    if constexpr (std::is_constructible_v<T, std::string_view>) return T(*text);
  }
  return T{};
}

// The environment variable that stands for a flag: TOKENSPEED_METRICS_ and
// the name after "--metrics-" in upper case, '-' as '_' (--enable-metrics:
// TOKENSPEED_METRICS_ENABLE).
std::string flag_variable(std::string_view flag);

// "--" and the name: how errors and to_flags spell a flag.
std::string flag_spelling(const MetricsFlag& flag);

// The error of a flag's value, keyed by key (the flag's spelling, or the
// variable that stands for it); a Prometheus flag's names the built-in output.
StartupError flag_error(const MetricsFlag& flag, const std::string& key,
                        const std::string& message);

// A flag's default as the help and the docs show it ("" for none).
std::string default_text(const MetricsFlag& flag);

// Whether options give the flag: a switch on, a list or text not empty, an
// optional set.
bool is_given(const Options& options, const MetricsFlag& flag);

// The flags of groups as a Markdown table (| Flag | Default | Meaning |),
// the table of docs/operators.md.
std::string metrics_flags_markdown(std::span<const FlagGroup> groups);

}  // namespace tokenspeed::metrics
