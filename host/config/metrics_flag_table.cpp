// metrics_flag_table.cpp — what is said of a row of the table of metrics
// flags: its spelling, its default as text, whether options give it, and the
// docs' Markdown table. Never parses.
#include "config/metrics_flag_table.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace tokenspeed::metrics {
namespace {

template <typename... Visitors>
struct Overloaded : Visitors... {
  using Visitors::operator()...;
};
// Spelled out: clang before 17 deduces no aggregate's template arguments.
template <typename... Visitors>
Overloaded(Visitors...) -> Overloaded<Visitors...>;

}  // namespace

const MetricsFlag* find_metrics_flag(std::string_view flag) {
  if (flag.starts_with("--")) flag.remove_prefix(2);
  for (const MetricsFlag& row : kMetricsFlags) {
    if (row.name == flag) return &row;
  }
  return nullptr;
}

std::string flag_spelling(const MetricsFlag& flag) { return "--" + std::string(flag.name); }

std::string flag_variable(std::string_view flag) {
  if (flag.starts_with("--")) flag.remove_prefix(2);
  if (flag == "enable-metrics") return "TOKENSPEED_METRICS_ENABLE";
  if (flag.starts_with("metrics-")) flag.remove_prefix(8);
  std::string variable = "TOKENSPEED_METRICS_";
  for (const char c : flag) {
    variable += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return variable;
}

StartupError flag_error(const MetricsFlag& flag, const std::string& key,
                        const std::string& message) {
  return StartupError({flag.group == FlagGroup::prometheus ? "prometheus" : "", "", key}, message);
}

void check_node_name(const MetricsFlag& flag, const std::string& key, const std::string& value) {
  if (value.empty() || value.size() > 253) {
    throw flag_error(flag, key, "must be 1-253 characters, got " + std::to_string(value.size()));
  }
  for (const char c : value) {
    if (c <= ' ' || c > '~' || c == '/' || c == ',' || c == '"' || c == '\'' || c == '\\') {
      throw flag_error(flag, key,
                       "may hold printable ASCII characters but no space, '/', ',', quote or "
                       "backslash");
    }
  }
}

std::string default_text(const MetricsFlag& flag) {
  return std::visit(Overloaded{[](std::monostate) { return std::string(); },
                               [](long long value) { return std::to_string(value); },
                               [](double value) {
                                 std::ostringstream out;
                                 out << value;
                                 return out.str();
                               },
                               [](std::string_view value) { return std::string(value); }},
                    flag.default_value);
}

bool is_given(const Options& options, const MetricsFlag& flag) {
  return std::visit(
      [&options](auto field) {
        const auto& value = options.*field;
        using Value = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<Value, bool>) {
          return value;
        } else if constexpr (std::is_same_v<Value, std::string> ||
                             std::is_same_v<Value, std::vector<std::string>>) {
          return !value.empty();
        } else {
          return value.has_value();
        }
      },
      flag.field);
}

std::string metrics_flags_markdown(std::span<const FlagGroup> groups) {
  std::string table = "| Flag | Default | Meaning |\n|---|---|---|\n";
  for (const MetricsFlag& flag : kMetricsFlags) {
    if (std::find(groups.begin(), groups.end(), flag.group) == groups.end()) continue;
    std::string spelled = flag_spelling(flag);
    if (!flag.value_name.empty()) spelled += " " + std::string(flag.value_name);
    const std::string shown = default_text(flag);
    table += "| `" + spelled + "` | " +
             (shown.empty() ? std::string(flag.default_text) : "`" + shown + "`") + " | " +
             std::string(flag.meaning) + " |\n";
  }
  return table;
}

}  // namespace tokenspeed::metrics
