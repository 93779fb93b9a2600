// metrics_flags.cpp — the flags of the table declared and parsed with
// Boost.Program_options into Options, Options::to_flags(), and the one check
// of the metrics options. Never reads files or loads plugins.
#include "config/metrics_flags.hpp"

#include <algorithm>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <boost/make_shared.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/value_semantic.hpp>

#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

namespace po = boost::program_options;

// The flag's error: the Prometheus flags' name the built-in output.
StartupError flag_error(const MetricsFlag& flag, const std::string& message) {
  return StartupError(
      {flag.group == FlagGroup::prometheus ? "prometheus" : "", "", flag_spelling(flag)}, message);
}

// A number outside its flag's range: the row's message, "{}" the value as given.
void check_range(const MetricsFlag& flag, double value, const std::string& as_given) {
  if (!flag.range || (value >= flag.range->min && value <= flag.range->max)) return;
  std::string message(flag.range->message);
  if (const auto at = message.find("{}"); at != std::string::npos) {
    message.replace(at, 2, as_given);
  }
  throw flag_error(flag, message);
}

const MetricsFlag& row(std::string_view name) { return *find_metrics_flag(name); }

// Every ranged flag that options give, checked against its row.
void check_ranges(const Options& given) {
  for (const MetricsFlag& flag : kMetricsFlags) {
    std::visit(
        [&](auto field) {
          const auto& value = given.*field;
          using Value = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<Value, std::optional<std::size_t>>) {
            // Past what a long long holds it is out of range all the same.
            constexpr auto kLargest =
                static_cast<std::size_t>(std::numeric_limits<long long>::max());
            if (value) {
              const auto number = static_cast<long long>(std::min(*value, kLargest));
              check_range(flag, static_cast<double>(number), std::to_string(number));
            }
          } else if constexpr (std::is_same_v<Value, std::optional<int>>) {
            if (value) check_range(flag, *value, std::to_string(*value));
          } else if constexpr (std::is_same_v<Value,
                                              std::optional<std::chrono::duration<double>>>) {
            if (value) check_range(flag, value->count(), std::to_string(value->count()));
          }
        },
        flag.field);
  }
}

// A label value, a resource attribute and a tag alike: printable ASCII,
// none of the characters that a back end's syntax would take apart.
std::string checked_node_name(const std::string& name) {
  const MetricsFlag& flag = row("metrics-node-name");
  if (name.empty() || name.size() > 253) {
    throw flag_error(flag, "must be 1-253 characters, got " + std::to_string(name.size()));
  }
  for (const char c : name) {
    if (c <= ' ' || c > '~' || c == '/' || c == ',' || c == '"' || c == '\'' || c == '\\') {
      throw flag_error(flag,
                       "may hold printable ASCII characters but no space, '/', ',', quote or "
                       "backslash");
    }
  }
  return name;
}

// Text that, when given, must not be empty.
std::optional<std::string> not_empty(const std::optional<std::string>& given, const char* name,
                                     const char* message) {
  if (given && given->empty()) throw flag_error(row(name), message);
  return given;
}

}  // namespace

MetricsSettings check_options(const Options& given) {
  check_ranges(given);
  MetricsSettings settings;
  settings.given = given;
  settings.queue_size = given.queue_size.value_or(kDefaultQueueSize);
  if (given.shutdown_timeout) {
    settings.shutdown_timeout =
        std::chrono::duration_cast<std::chrono::nanoseconds>(*given.shutdown_timeout);
  }
  settings.host = not_empty(given.host, "metrics-host", "the host must not be empty");
  if (given.port) settings.port = static_cast<unsigned short>(*given.port);
  if (const auto dir = not_empty(given.multiproc_dir, "metrics-multiproc-dir",
                                 "the directory must not be empty")) {
    settings.multiproc_base_dir = *dir;
  }
  settings.max_series_per_family = given.max_series_per_family.value_or(kDefaultMaxSeriesPerFamily);
  settings.web_config_file =
      not_empty(given.web_config, "metrics-web-config", "the file name must not be empty");
  if (given.node_name) settings.node_name = checked_node_name(*given.node_name);
  return settings;
}

namespace {

// The Boost.Program_options value of a row: its kind from the field's type.
po::value_semantic* semantic(const MetricsFlag& flag) {
  return std::visit(
      [&flag](auto field) -> po::value_semantic* {
        using Value = std::decay_t<decltype(std::declval<Options>().*field)>;
        if constexpr (std::is_same_v<Value, bool>) {
          return po::bool_switch();
        } else if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
          return po::value<std::vector<std::string>>()->composing();
        } else if constexpr (std::is_same_v<Value, std::string> ||
                             std::is_same_v<Value, std::optional<std::string>>) {
          auto* value = po::value<std::string>();
          if (const auto* text = std::get_if<std::string_view>(&flag.default_value)) {
            value->default_value(std::string(*text));
          }
          return value;
        } else if constexpr (std::is_same_v<Value, std::optional<std::chrono::duration<double>>>) {
          auto* value = po::value<double>();
          if (const auto* seconds = std::get_if<double>(&flag.default_value)) {
            value->default_value(*seconds);
          }
          return value;
        } else {  // a whole number
          auto* value = po::value<long long>();
          if (const auto* number = std::get_if<long long>(&flag.default_value)) {
            value->default_value(*number);
          }
          return value;
        }
      },
      flag.field);
}

}  // namespace

void add_metrics_flags(po::options_description& description, std::span<const FlagGroup> groups) {
  for (const MetricsFlag& flag : kMetricsFlags) {
    if (std::find(groups.begin(), groups.end(), flag.group) == groups.end()) continue;
    description.add(boost::make_shared<po::option_description>(
        std::string(flag.name).c_str(), semantic(flag), std::string(flag.help).c_str()));
  }
}

po::options_description all_metrics_flags() {
  po::options_description description("metrics options");
  add_metrics_flags(description);
  return description;
}

namespace {

// The value of a flag the command line gave; empty when it was not declared,
// not given, or left at its default. T is the type the flag was declared with.
template <typename T>
std::optional<T> given_value(const po::variables_map& values, std::string_view flag) {
  const auto found = values.find(std::string(flag));
  if (found == values.end() || found->second.defaulted()) return std::nullopt;
  return found->second.as<T>();
}

}  // namespace

Options options_from_flags(const po::variables_map& values) {
  Options options;
  for (const MetricsFlag& flag : kMetricsFlags) {
    std::visit(
        [&](auto field) {
          auto& value = options.*field;
          using Value = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<Value, bool>) {
            value = given_value<bool>(values, flag.name).value_or(false);
          } else if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
            value = given_value<Value>(values, flag.name).value_or(Value{});
          } else if constexpr (std::is_same_v<Value, std::string>) {
            value = given_value<std::string>(values, flag.name).value_or("");
          } else if constexpr (std::is_same_v<Value, std::optional<std::string>>) {
            value = given_value<std::string>(values, flag.name);
          } else if constexpr (std::is_same_v<Value,
                                              std::optional<std::chrono::duration<double>>>) {
            if (const auto seconds = given_value<double>(values, flag.name)) {
              value = std::chrono::duration<double>(*seconds);
            }
          } else if (const auto number = given_value<long long>(values, flag.name)) {
            // Refused as typed before it is narrowed to its field.
            check_range(flag, static_cast<double>(*number), std::to_string(*number));
            value = static_cast<typename Value::value_type>(*number);
          }
        },
        flag.field);
  }
  return options;
}

namespace {

std::string format_double(double value) {
  std::ostringstream out;
  out.precision(17);
  out << value;
  return out.str();
}

}  // namespace

// A convenience for engines that pass their options on to processes of
// their own; the host never goes through flags for its own options.
std::vector<std::string> Options::to_flags() const {
  std::vector<std::string> flags;
  for (const MetricsFlag& flag : kMetricsFlags) {
    const std::string spelled = flag_spelling(flag);
    std::visit(
        [&](auto field) {
          const auto& value = this->*field;
          using Value = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<Value, bool>) {
            if (value) flags.push_back(spelled);
          } else if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
            for (const std::string& each : value) {
              flags.push_back(spelled);
              flags.push_back(each);
            }
          } else if constexpr (std::is_same_v<Value, std::string>) {
            if (!value.empty()) {
              flags.push_back(spelled);
              flags.push_back(value);
            }
          } else if (value) {
            flags.push_back(spelled);
            if constexpr (std::is_same_v<Value, std::optional<std::string>>) {
              flags.push_back(*value);
            } else if constexpr (std::is_same_v<Value,
                                                std::optional<std::chrono::duration<double>>>) {
              flags.push_back(format_double(value->count()));
            } else {
              flags.push_back(std::to_string(*value));
            }
          }
        },
        flag.field);
  }
  return flags;
}

namespace {

// The one-line message of a flag error. Boost.Program_options formats it by
// replacing placeholders such as "%value%" until none is left, which never
// ends when the value the operator typed contains one: a line of our own then.
template <typename Args>
std::string flag_error_message(const po::error_with_option_name& error, const Args& args) {
  for (const auto& arg : args) {
    if (std::string_view(arg).find('%') != std::string_view::npos)
      return "the flag or its value is not valid";
  }
  return error.what();
}

}  // namespace

po::variables_map parse_command_line(int argc, char** argv,
                                     const po::options_description& description) {
  po::variables_map values;
  try {
    po::store(
        po::command_line_parser(argc, argv)
            .options(description)
            .positional(po::positional_options_description())
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run(),
        values);
    po::notify(values);
  } catch (const po::error_with_option_name& error) {
    throw StartupError(
        {{}, {}, error.get_option_name()},
        flag_error_message(error, std::span<char*>(argv, static_cast<std::size_t>(argc))));
  } catch (const po::error& error) {
    throw StartupError({}, error.what());
  }
  return values;
}

ExtractedFlags extract_flags(const std::vector<std::string>& args,
                             const po::options_description& description) {
  ExtractedFlags result;
  try {
    const po::parsed_options parsed =
        po::command_line_parser(args)
            .options(description)
            .allow_unregistered()
            .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
            .run();
    for (const po::option& option : parsed.options) {
      if (!option.unregistered) continue;
      const std::string& flag =
          option.original_tokens.empty() ? option.string_key : option.original_tokens.front();
      const std::string name = flag.substr(0, flag.find('='));
      if (name.starts_with("--metrics-") || name.starts_with("--enable-metrics")) {
        throw StartupError({"", "", name}, "unknown metrics flag");
      }
    }
    po::store(parsed, result.values);
    po::notify(result.values);
    result.rest = po::collect_unrecognized(parsed.options, po::include_positional);
  } catch (const po::error_with_option_name& error) {
    throw StartupError({{}, {}, error.get_option_name()}, flag_error_message(error, args));
  } catch (const po::error& error) {
    throw StartupError({}, error.what());
  }
  return result;
}

std::string usage(const std::string& command, const std::string& synopsis,
                  const po::options_description& description) {
  std::ostringstream out;
  out << "usage: tokenspeed-metrics " << command << ' ' << synopsis << "\n\n" << description;
  return out.str();
}

}  // namespace tokenspeed::metrics
