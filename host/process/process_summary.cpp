// process_summary.cpp — summary files in Boost.JSON, and the exit table.
#include "process/process_summary.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

namespace tokenspeed::metrics {
namespace {

std::uint64_t number(const boost::json::object& json, const char* key) {
  const boost::json::value* value = json.if_contains(key);
  return value != nullptr && value->is_number() ? value->to_number<std::uint64_t>() : 0;
}

}  // namespace

bool write_process_summary(const std::filesystem::path& dir,
                           const ProcessSummary& summary) noexcept {
  try {
    boost::json::array outputs;
    for (const SinkStats& s : summary.outputs) {
      outputs.push_back(boost::json::object{
          {"name", s.name},
          {"accepted", s.accepted},
          {"delivered", s.delivered},
          {"dropped_full", s.dropped_full},
          {"dropped_disabled", s.dropped_disabled},
          {"dropped_after_close", s.dropped_after_close},
          {"discarded_at_deadline", s.discarded_at_deadline},
          {"failed", s.disabled || s.create_failed},
      });
    }
    const std::string text = boost::json::serialize(boost::json::object{
        {"process", summary.process}, {"pid", summary.pid}, {"outputs", std::move(outputs)}});
    const std::filesystem::path path = dir / ("summary-" + std::to_string(summary.pid) + ".json");
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return false;
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
  } catch (...) {
    return false;
  }
}

std::vector<ProcessSummary> read_process_summaries(const std::filesystem::path& dir) {
  std::vector<ProcessSummary> summaries;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("summary-", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    boost::system::error_code parse_error;
    const boost::json::value json = boost::json::parse(text.str(), parse_error);
    if (parse_error || !json.is_object()) continue;
    const boost::json::object& object = json.get_object();
    ProcessSummary summary;
    if (const auto* process = object.if_contains("process"); process && process->is_string()) {
      summary.process = std::string(process->get_string());
    }
    summary.pid = static_cast<pid_t>(number(object, "pid"));
    if (const auto* outputs = object.if_contains("outputs"); outputs && outputs->is_array()) {
      for (const boost::json::value& value : outputs->get_array()) {
        if (!value.is_object()) continue;
        const boost::json::object& o = value.get_object();
        SinkStats s;
        if (const auto* n = o.if_contains("name"); n && n->is_string())
          s.name = std::string(n->get_string());
        s.accepted = number(o, "accepted");
        s.delivered = number(o, "delivered");
        s.dropped_full = number(o, "dropped_full");
        s.dropped_disabled = number(o, "dropped_disabled");
        s.dropped_after_close = number(o, "dropped_after_close");
        s.discarded_at_deadline = number(o, "discarded_at_deadline");
        const auto* failed = o.if_contains("failed");
        s.disabled = failed != nullptr && failed->is_bool() && failed->get_bool();
        summary.outputs.push_back(std::move(s));
      }
    }
    summaries.push_back(std::move(summary));
  }
  std::sort(summaries.begin(), summaries.end(),
            [](const ProcessSummary& a, const ProcessSummary& b) { return a.process < b.process; });
  return summaries;
}

std::string format_summary_table(const std::vector<ProcessSummary>& summaries) {
  std::string table;
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %-8s %-12s %12s %12s %10s %10s %7s\n", "process", "pid",
                "output", "accepted", "delivered", "dropped", "discarded", "failed");
  table += line;
  for (const ProcessSummary& summary : summaries) {
    for (const SinkStats& s : summary.outputs) {
      std::snprintf(
          line, sizeof line, "%-14s %-8d %-12s %12llu %12llu %10llu %10llu %7s\n",
          summary.process.c_str(), static_cast<int>(summary.pid), s.name.c_str(),
          static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.delivered),
          static_cast<unsigned long long>(s.dropped_full + s.dropped_disabled +
                                          s.dropped_after_close),
          static_cast<unsigned long long>(s.discarded_at_deadline), s.disabled ? "yes" : "no");
      table += line;
    }
  }
  return table;
}

}  // namespace tokenspeed::metrics
