/*
 * tokenspeed/kit/settings.hpp — a plugin's typed settings table: one row per
 * key (type, default, range or choices, one-line description) that validates
 * and normalizes the JSON settings, reads them back typed in create_sink, and
 * describes itself for `tokenspeed-metrics plugins` and the plugin's docs.
 * Header-only C++17; needs no JSON library. Never used on the event path.
 *
 *   const kit::SettingsTable table{{
 *       {"endpoint", kit::SettingType::kString, R"("http://127.0.0.1:4318")", 0, 0,
 *        "Where to send."},
 *       {"timeout_ms", kit::SettingType::kInteger, "10000", 1, 600000, "Per request."},
 *       {"compression", kit::SettingType::kChoice, R"("gzip")", 0, 0, "Body encoding.",
 *        "gzip|none"},
 *   }};
 *   reporter.validate = [&](std::string_view c) { return table.validate_text(c); };
 *   ...  const kit::Settings s = table.read(producer_config);  s.integer("timeout_ms");
 */
#ifndef TOKENSPEED_KIT_SETTINGS_HPP
#define TOKENSPEED_KIT_SETTINGS_HPP

#include <tokenspeed/kit/json.hpp>

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics::kit {

enum class SettingType {
  kString,     // any string (see non_empty)
  kInteger,    // an integer in [min, max]
  kNumber,     // a number in [min, max]
  kBoolean,    // true or false
  kChoice,     // one of the strings in choices ("a|b|c")
  kStringMap,  // an object whose values are all strings (headers, attributes)
};

inline const char* setting_type_name(SettingType type) noexcept {
  switch (type) {
    case SettingType::kString:
      return "string";
    case SettingType::kInteger:
      return "integer";
    case SettingType::kNumber:
      return "number";
    case SettingType::kBoolean:
      return "boolean";
    case SettingType::kChoice:
      return "choice";
    case SettingType::kStringMap:
      return "object of strings";
  }
  return "unknown";
}

/* One row of the table. default_json is the default as JSON text; empty
 * means the key is required. */
struct Setting {
  constexpr Setting(std::string_view key_, SettingType type_, std::string_view default_json_,
                    double min_, double max_, std::string_view description_,
                    std::string_view choices_ = {}) noexcept
      : key(key_),
        type(type_),
        default_json(default_json_),
        min(min_),
        max(max_),
        description(description_),
        choices(choices_) {}

  std::string_view key;
  SettingType type = SettingType::kString;
  std::string_view default_json;
  double min = 0;  // integers and numbers
  double max = 0;
  std::string_view description;
  std::string_view choices;  // kChoice: "gzip|none"
};

/* The settings of one sink, after SettingsTable::read: every key present.
 * Getters throw std::out_of_range for a key not in the table (a plugin bug).
 * Threading: a plain value. */
class Settings {
 public:
  explicit Settings(json::Value object) : object_(std::move(object)) {}
  const std::string& string(std::string_view key) const { return object_.at(key).as_string(); }
  int64_t integer(std::string_view key) const { return object_.at(key).as_integer(); }
  double number(std::string_view key) const { return object_.at(key).as_number(); }
  bool boolean(std::string_view key) const { return object_.at(key).as_bool(); }
  std::vector<std::pair<std::string, std::string>> string_map(std::string_view key) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const json::Member& member : object_.at(key).as_object())
      out.emplace_back(member.first, member.second.as_string());
    return out;
  }
  const json::Value& json() const noexcept { return object_; }

 private:
  json::Value object_;
};

/* Threading: immutable after construction; every method may be called from
 * any thread. */
class SettingsTable {
 public:
  SettingsTable(std::initializer_list<Setting> rows) : rows_(rows) {}

  const std::vector<Setting>& rows() const noexcept { return rows_; }

  /* Checks a settings object (JSON text): unknown keys rejected with the
   * allowed ones listed, types, ranges and choices checked, required keys
   * present; returns the object with every key of the table, in table order,
   * defaults filled in. Throws std::invalid_argument with a one-line message
   * that names the key. */
  json::Value validate(std::string_view config_json) const {
    json::Value parsed;
    try {
      parsed = json::parse(config_json);
    } catch (const json::ParseError& e) {
      throw std::invalid_argument(std::string("settings are not valid JSON: ") + e.what());
    }
    if (!parsed.is_object()) throw std::invalid_argument("settings must be a JSON object");
    for (const json::Member& member : parsed.as_object()) {
      const Setting* row = find(member.first);
      if (row == nullptr) {
        throw std::invalid_argument("unknown key '" + member.first +
                                    "'; allowed keys: " + allowed_keys());
      }
      check(*row, member.second);
    }
    json::Object normalized;
    for (const Setting& row : rows_) {
      if (const json::Value* given = parsed.find(row.key)) {
        normalized.emplace_back(std::string(row.key), *given);
      } else if (row.default_json.empty()) {
        throw std::invalid_argument("'" + std::string(row.key) + "' is required");
      } else {
        normalized.emplace_back(std::string(row.key), json::parse(row.default_json));
      }
    }
    return json::Value(std::move(normalized));
  }

  /* validate, as JSON text: what a reporter's validate returns. */
  std::string validate_text(std::string_view config_json) const {
    return json::serialize(validate(config_json));
  }

  /* The typed settings of a producer configuration (validated again: the
   * producer configuration crossed a process boundary). */
  Settings read(std::string_view producer_config_json) const {
    return Settings(validate(producer_config_json));
  }

  /* The table as a JSON array, one object per key with "key", "type",
   * "default" (absent when required), "min"/"max" (numbers), "choices"
   * (choice), "description": what the descriptor's settings field carries. */
  std::string describe() const {
    json::Array rows;
    for (const Setting& row : rows_) {
      json::Object entry;
      entry.emplace_back("key", std::string(row.key));
      entry.emplace_back("type", setting_type_name(row.type));
      if (!row.default_json.empty()) entry.emplace_back("default", json::parse(row.default_json));
      if (row.type == SettingType::kInteger) {
        entry.emplace_back("min", static_cast<int64_t>(row.min));
        entry.emplace_back("max", static_cast<int64_t>(row.max));
      } else if (row.type == SettingType::kNumber) {
        entry.emplace_back("min", row.min);
        entry.emplace_back("max", row.max);
      }
      if (row.type == SettingType::kChoice) {
        json::Array choices;
        for (const std::string_view choice : split_choices(row.choices))
          choices.emplace_back(choice);
        entry.emplace_back("choices", std::move(choices));
      }
      entry.emplace_back("description", std::string(row.description));
      rows.emplace_back(std::move(entry));
    }
    return json::serialize(json::Value(std::move(rows)));
  }

  /* "endpoint, timeout_ms, ..." */
  std::string allowed_keys() const {
    std::string keys;
    for (const Setting& row : rows_) {
      if (!keys.empty()) keys += ", ";
      keys += row.key;
    }
    return keys;
  }

  const Setting* find(std::string_view key) const noexcept {
    for (const Setting& row : rows_) {
      if (row.key == key) return &row;
    }
    return nullptr;
  }

  static std::vector<std::string_view> split_choices(std::string_view choices) {
    std::vector<std::string_view> out;
    while (!choices.empty()) {
      const std::size_t bar = choices.find('|');
      out.push_back(choices.substr(0, bar));
      if (bar == std::string_view::npos) break;
      choices.remove_prefix(bar + 1);
    }
    return out;
  }

 private:
  static std::string number_text(double v) {
    if (v == static_cast<double>(static_cast<int64_t>(v)))
      return std::to_string(static_cast<int64_t>(v));
    return json::serialize(json::Value(v));
  }

  static void check(const Setting& row, const json::Value& value) {
    const std::string key = "'" + std::string(row.key) + "'";
    switch (row.type) {
      case SettingType::kString:
        if (!value.is_string())
          throw std::invalid_argument(key + " must be a string, got " + value.kind_name());
        return;
      case SettingType::kBoolean:
        if (!value.is_bool())
          throw std::invalid_argument(key + " must be true or false, got " + value.kind_name());
        return;
      case SettingType::kInteger:
        if (!value.is_integer() || static_cast<double>(value.as_integer()) < row.min ||
            static_cast<double>(value.as_integer()) > row.max) {
          throw std::invalid_argument(key + " must be an integer from " + number_text(row.min) +
                                      " to " + number_text(row.max) + ", got " +
                                      json::serialize(value));
        }
        return;
      case SettingType::kNumber:
        if (!value.is_number() || value.as_number() < row.min || value.as_number() > row.max) {
          throw std::invalid_argument(key + " must be a number from " + number_text(row.min) +
                                      " to " + number_text(row.max) + ", got " +
                                      json::serialize(value));
        }
        return;
      case SettingType::kChoice: {
        if (value.is_string()) {
          for (const std::string_view choice : split_choices(row.choices)) {
            if (choice == value.as_string()) return;
          }
        }
        std::string listed;
        for (const std::string_view choice : split_choices(row.choices)) {
          if (!listed.empty()) listed += ", ";
          listed += "\"" + std::string(choice) + "\"";
        }
        throw std::invalid_argument(key + " must be one of " + listed + ", got " +
                                    json::serialize(value));
      }
      case SettingType::kStringMap:
        if (!value.is_object())
          throw std::invalid_argument(key + " must be an object of strings, got " +
                                      value.kind_name());
        for (const json::Member& member : value.as_object()) {
          if (!member.second.is_string()) {
            throw std::invalid_argument(key + ": '" + member.first + "' must be a string, got " +
                                        member.second.kind_name());
          }
        }
        return;
    }
  }

  std::vector<Setting> rows_;
};

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_SETTINGS_HPP
