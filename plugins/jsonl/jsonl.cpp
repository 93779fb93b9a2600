// jsonl.cpp — the jsonl output: its settings table (read by validate and
// mirrored in docs/plugin-authors.md), validate, create_sink, registration.
// Registration only declares factories: no thread, no file before create_sink.
#include <unistd.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <boost/json.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "jsonl_sink.hpp"

namespace tokenspeed::metrics::jsonl {
namespace {

// ------------------------------------------------------------------ settings

enum class SettingType { kString, kInteger, kBoolean };

struct Setting {
  std::string_view key;
  SettingType type;
  std::string_view default_json;  // empty: required
  int64_t min;                    // integers only
  int64_t max;
  std::string_view description;
};

constexpr std::array<Setting, 5> kSettings{{
    {"path", SettingType::kString, "", 0, 0,
     "File to write, one JSON object per line. {pid} is replaced by the process id so "
     "each producer writes its own file. Made absolute against the launcher's working "
     "directory. Required."},
    {"flush_interval_ms", SettingType::kInteger, "1000", 1, 3'600'000,
     "Longest time an accepted event waits in memory before it is written."},
    {"buffer_bytes", SettingType::kInteger, "1048576", 4096, int64_t{1} << 30,
     "Pending event data that triggers a write before the interval ends."},
    {"max_pending_bytes", SettingType::kInteger, "67108864", 4096, int64_t{1} << 36,
     "Bound on event data held in memory and not yet written; beyond it events are "
     "dropped, counted and logged. At least buffer_bytes."},
    {"append", SettingType::kBoolean, "true", 0, 0,
     "true: append to an existing file; false: truncate it when the sink is created."},
}};

std::string allowed_keys() {
  std::string keys;
  for (const Setting& setting : kSettings) {
    if (!keys.empty()) keys += ", ";
    keys += setting.key;
  }
  return keys;
}

const Setting* find_setting(std::string_view key) noexcept {
  for (const Setting& setting : kSettings) {
    if (setting.key == key) return &setting;
  }
  return nullptr;
}

std::string quoted(std::string_view key) { return "'" + std::string(key) + "'"; }

void check_type(const Setting& setting, const boost::json::value& value) {
  switch (setting.type) {
    case SettingType::kString:
      if (!value.is_string())
        throw std::invalid_argument(quoted(setting.key) + " must be a string");
      return;
    case SettingType::kBoolean:
      if (!value.is_bool()) {
        throw std::invalid_argument(quoted(setting.key) + " must be true or false");
      }
      return;
    case SettingType::kInteger: {
      const bool in_range =
          (value.is_int64() && value.get_int64() >= setting.min &&
           value.get_int64() <= setting.max) ||
          (value.is_uint64() && value.get_uint64() <= static_cast<uint64_t>(setting.max) &&
           value.get_uint64() >= static_cast<uint64_t>(setting.min));
      if (!in_range) {
        throw std::invalid_argument(quoted(setting.key) + " must be an integer from " +
                                    std::to_string(setting.min) + " to " +
                                    std::to_string(setting.max));
      }
      return;
    }
  }
}

// Checks the path setting: non-empty, and (when the folder part names no
// {pid}) an existing folder, so that a typo fails at startup, not later.
std::string normalize_path(std::string_view text) {
  if (text.empty()) throw std::invalid_argument("'path' must not be empty");
  if (text.find('\0') != std::string_view::npos) {
    throw std::invalid_argument("'path' must not contain a NUL character");
  }
  std::error_code error;
  std::filesystem::path path = std::filesystem::absolute(std::filesystem::path(text), error);
  if (error) throw std::invalid_argument("'path' " + std::string(text) + ": " + error.message());
  const std::filesystem::path folder = path.parent_path();
  if (folder.string().find("{pid}") == std::string::npos &&
      !std::filesystem::is_directory(folder, error)) {
    throw std::invalid_argument("'path' " + path.string() + ": folder " + folder.string() +
                                " does not exist");
  }
  return path.string();
}

// Parses and checks a configuration object; returns it with every setting,
// in table order, defaults filled in and the path made absolute.
boost::json::object normalize(std::string_view config_json) {
  boost::json::error_code error;
  boost::json::value parsed = boost::json::parse(config_json, error);
  if (error) throw std::invalid_argument("settings are not valid JSON: " + error.message());
  if (!parsed.is_object()) throw std::invalid_argument("settings must be a JSON object");
  const boost::json::object& given = parsed.get_object();

  for (const auto& entry : given) {
    const Setting* setting = find_setting(entry.key());
    if (setting == nullptr) {
      throw std::invalid_argument("unknown key " + quoted(entry.key()) +
                                  "; allowed keys: " + allowed_keys());
    }
    check_type(*setting, entry.value());
  }

  boost::json::object normalized;
  for (const Setting& setting : kSettings) {
    const boost::json::value* value = given.if_contains(setting.key);
    if (value != nullptr) {
      normalized[setting.key] = *value;
    } else if (setting.default_json.empty()) {
      throw std::invalid_argument(quoted(setting.key) +
                                  " is required; allowed keys: " + allowed_keys());
    } else {
      normalized[setting.key] = boost::json::parse(setting.default_json);
    }
  }
  normalized["path"] = normalize_path(normalized["path"].as_string());
  if (normalized["max_pending_bytes"].to_number<int64_t>() <
      normalized["buffer_bytes"].to_number<int64_t>()) {
    throw std::invalid_argument("'max_pending_bytes' must be at least 'buffer_bytes'");
  }
  return normalized;
}

// Replaces every "{pid}" in path with the id of this process.
std::string substitute_pid(std::string path) {
  const std::string pid = std::to_string(::getpid());
  for (std::size_t at = path.find("{pid}"); at != std::string::npos;
       at = path.find("{pid}", at + pid.size())) {
    path.replace(at, 5, pid);
  }
  return path;
}

// --------------------------------------------------------------- callbacks

std::string validate(std::string_view config_json) {
  return boost::json::serialize(normalize(config_json));
}

std::unique_ptr<JsonlSink> create_sink(std::string_view producer_config, const plugin::Host& host) {
  const boost::json::object settings = normalize(producer_config);
  SinkOptions options;
  options.path = substitute_pid(std::string(settings.at("path").as_string()));
  options.flush_interval =
      std::chrono::milliseconds(settings.at("flush_interval_ms").to_number<int64_t>());
  options.buffer_bytes = settings.at("buffer_bytes").to_number<std::size_t>();
  options.max_pending_bytes = settings.at("max_pending_bytes").to_number<std::size_t>();
  options.append = settings.at("append").as_bool();
  return std::make_unique<JsonlSink>(std::move(options), host);
}

}  // namespace
}  // namespace tokenspeed::metrics::jsonl

// -------------------------------------------------------------- registration

#ifndef TSM_JSONL_VERSION
#define TSM_JSONL_VERSION "0.0.0"
#endif

extern "C" TSM_EXPORT int tsm_register(const tsm_host_api* host, tsm_buffer* error) {
  namespace plugin = tokenspeed::metrics::plugin;
  namespace jsonl = tokenspeed::metrics::jsonl;
  return plugin::register_reporters(host, error, [](plugin::Registrar& registrar) {
    plugin::Reporter<jsonl::JsonlSink> reporter;
    reporter.name = "jsonl";
    reporter.validate = jsonl::validate;
    reporter.create_sink = jsonl::create_sink;
    reporter.version = TSM_JSONL_VERSION;
    registrar.add(std::move(reporter));  // start_node NULL: no node resources
  });
}
