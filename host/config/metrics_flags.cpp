// metrics_flags.cpp — the flags of the table declared and parsed with
// Boost.Program_options into Options, Options::to_flags(), and the one check
// of the metrics options. Never reads files or loads plugins.
#include "config/metrics_flags.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
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

// A number outside its flag's range: the row's message, "{}" the value as given.
void check_range(const MetricsFlag& flag, const std::string& key, double value,
                 const std::string& as_given) {
  if (!flag.range || (value >= flag.range->min && value <= flag.range->max)) return;
  std::string message(flag.range->message);
  if (const auto at = message.find("{}"); at != std::string::npos) {
    message.replace(at, 2, as_given);
  }
  throw flag_error(flag, key, message);
}

// A given value against its row: a number's range, a text's emptiness and
// the row's own rule. key names the flag (or its variable) in the error.
template <typename Value>
void check_value(const MetricsFlag& flag, const std::string& key, const Value& value) {
  if constexpr (std::is_same_v<Value, std::optional<std::size_t>>) {
    // Past what a long long holds it is out of range all the same.
    constexpr auto kLargest = static_cast<std::size_t>(std::numeric_limits<long long>::max());
    if (value) {
      const auto number = static_cast<long long>(std::min(*value, kLargest));
      check_range(flag, key, static_cast<double>(number), std::to_string(number));
    }
  } else if constexpr (std::is_same_v<Value, std::optional<int>>) {
    if (value) check_range(flag, key, *value, std::to_string(*value));
  } else if constexpr (std::is_same_v<Value, std::optional<std::chrono::duration<double>>>) {
    if (value) check_range(flag, key, value->count(), std::to_string(value->count()));
  } else if constexpr (std::is_same_v<Value, std::optional<std::string>>) {
    if (value && value->empty() && !flag.empty_message.empty()) {
      throw flag_error(flag, key, std::string(flag.empty_message));
    }
    if (value && flag.check != nullptr) flag.check(flag, key, *value);
  }
}

// Every flag that options give, checked against its row.
void check_given(const Options& given, bool key_by_variable) {
  for (const MetricsFlag& flag : kMetricsFlags) {
    const std::string key = key_by_variable ? flag_variable(flag.name) : flag_spelling(flag);
    std::visit([&](auto field) { check_value(flag, key, given.*field); }, flag.field);
  }
}

// A field's value, or its row's default.
template <typename Value>
Value value_or_default(const std::optional<Value>& value, const MetricsFlag& flag) {
  return value ? *value : flag_default<Value>(flag);
}

}  // namespace

MetricsSettings check_options(const Options& given) {
  check_given(given, /*key_by_variable=*/false);
  MetricsSettings settings;
  settings.given = given;
  settings.queue_size = value_or_default(given.queue_size, metrics_flag(&Options::queue_size));
  settings.shutdown_timeout =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(
          given.shutdown_timeout ? given.shutdown_timeout->count()
                                 : flag_default<double>(metrics_flag(&Options::shutdown_timeout))));
  settings.max_series_per_family =
      value_or_default(given.max_series_per_family, metrics_flag(&Options::max_series_per_family));
  // Not given, these take the endpoint's and the run directory's own
  // defaults (prometheus/prometheus_options.hpp).
  settings.host = given.host;
  if (given.port) settings.port = static_cast<unsigned short>(*given.port);
  if (given.multiproc_dir) settings.multiproc_dir = *given.multiproc_dir;
  settings.web_config = given.web_config;
  settings.node_name = given.node_name.value_or("");
  settings.metric_views = given.metric_views;
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
            check_range(flag, flag_spelling(flag), static_cast<double>(*number),
                        std::to_string(*number));
            value = static_cast<typename Value::value_type>(*number);
          }
        },
        flag.field);
  }
  return options;
}

namespace {

// A switch's variable: what a shell user writes for yes and for no.
bool switch_value(const MetricsFlag& flag, const std::string& variable, std::string_view text) {
  std::string lower;
  for (const char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "1" || lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower.empty() || lower == "0" || lower == "false" || lower == "no" || lower == "off") {
    return false;
  }
  throw flag_error(flag, variable, "expected 1, true, yes or on (or 0, false, no, off)");
}

// The whole text as a number of type T, or an error naming the variable.
template <typename T>
T number_value(const MetricsFlag& flag, const std::string& variable, std::string_view text,
               const char* expected) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      (std::is_floating_point_v<T> && !std::isfinite(static_cast<double>(value)))) {
    throw flag_error(flag, variable,
                     std::string("expected ") + expected + ", got '" + std::string(text) + "'");
  }
  return value;
}

// One variable's text into its field, by the field's kind.
template <typename Value>
void read_variable(const MetricsFlag& flag, const std::string& variable, std::string_view text,
                   Value& value) {
  if constexpr (std::is_same_v<Value, bool>) {
    value = switch_value(flag, variable, text);
  } else if constexpr (std::is_same_v<Value, std::vector<std::string>>) {
    if (flag.list_separator == 0) {
      value.emplace_back(text);
      return;
    }
    for (std::size_t at; (at = text.find(flag.list_separator)) != std::string_view::npos;
         text.remove_prefix(at + 1)) {
      if (at > 0) value.emplace_back(text.substr(0, at));  // "a::b" has no empty entry
    }
    if (!text.empty()) value.emplace_back(text);
  } else if constexpr (std::is_same_v<Value, std::string> ||
                       std::is_same_v<Value, std::optional<std::string>>) {
    value = std::string(text);
  } else if constexpr (std::is_same_v<Value, std::optional<std::chrono::duration<double>>>) {
    value = std::chrono::duration<double>(number_value<double>(flag, variable, text, "seconds"));
  } else {  // a whole number, refused as written before it is narrowed to its field
    const auto number = number_value<long long>(flag, variable, text, "a whole number");
    check_range(flag, variable, static_cast<double>(number), std::to_string(number));
    value = static_cast<typename Value::value_type>(number);
  }
}

}  // namespace

Options options_from_environment(const std::function<const char*(const std::string&)>& lookup) {
  Options options;
  for (const MetricsFlag& flag : kMetricsFlags) {
    const std::string variable = flag_variable(flag.name);
    const char* text = lookup(variable);
    if (text == nullptr) continue;
    std::visit([&](auto field) { read_variable(flag, variable, text, options.*field); },
               flag.field);
  }
  check_given(options, /*key_by_variable=*/true);
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
