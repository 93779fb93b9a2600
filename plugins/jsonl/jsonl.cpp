// jsonl.cpp — the jsonl output: its settings table (read by validate, shown by
// `tokenspeed-metrics plugins`, mirrored in docs/plugin-authors.md), its
// checks across keys, create_sink, registration. Registration opens no file and starts no thread.
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

#include <tokenspeed/kit/registration.hpp>
#include <tokenspeed/kit/settings.hpp>
#include <tokenspeed/metric_reporter.hpp>

#include "jsonl_sink.hpp"

namespace tokenspeed::metrics::jsonl {
namespace {

// ------------------------------------------------------------------ settings

namespace kit = tokenspeed::metrics::kit;
using kit::SettingType;

const kit::SettingsTable& settings_table() {
  static const kit::SettingsTable table{{
      {"path", SettingType::kString, "", 0, 0,
       "File to write, one JSON object per line. {pid} is replaced by the process id so "
       "each producer writes its own file. Made absolute against the launcher's working "
       "directory. Required."},
      kit::Setting("flush_interval_ms", SettingType::kInteger, "1000", 1, 3'600'000,
                   "Longest time an accepted event waits in memory before it is written.")
          .bind<&SinkOptions::flush_interval>(),
      kit::Setting("buffer_bytes", SettingType::kInteger, "1048576", 4096,
                   static_cast<double>(int64_t{1} << 30),
                   "Pending event data that triggers a write before the interval ends.")
          .bind<&SinkOptions::buffer_bytes>(),
      kit::Setting("max_pending_bytes", SettingType::kInteger, "67108864", 4096,
                   static_cast<double>(int64_t{1} << 36),
                   "Bound on event data held in memory and not yet written; beyond it events are "
                   "dropped, counted and logged. At least buffer_bytes.")
          .bind<&SinkOptions::max_pending_bytes>(),
      kit::Setting("append", SettingType::kBoolean, "true", 0, 0,
                   "true: append to an existing file; false: truncate it when the sink is "
                   "created.")
          .bind<&SinkOptions::append>(),
  }};
  return table;
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

// The checks across keys, after the table's: the path made absolute.
void check(kit::json::Value& settings) {
  for (kit::json::Member& member : settings.as_object()) {
    if (member.first == "path") member.second = normalize_path(member.second.as_string());
  }
  if (settings.at("max_pending_bytes").as_integer() < settings.at("buffer_bytes").as_integer()) {
    throw std::invalid_argument("'max_pending_bytes' must be at least 'buffer_bytes'");
  }
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

// --------------------------------------------------------------- create_sink

std::unique_ptr<JsonlSink> create_sink(const kit::Settings& settings, const plugin::Host& host) {
  SinkOptions options;
  settings_table().fill(settings, options);
  options.path = substitute_pid(settings.string("path"));
  return std::make_unique<JsonlSink>(std::move(options), host);
}

}  // namespace

// Registration (start_node NULL: no node resources).
TSM_KIT_REGISTER_OUTPUT(JsonlSink, "jsonl", TSM_PLUGIN_VERSION, &settings_table(), check,
                        create_sink)

}  // namespace tokenspeed::metrics::jsonl
