// process_summary.cpp — summary files in Boost.JSON, and the exit table.
#include "process/process_summary.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fstream>
#include <sstream>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include "core/fault_log.hpp"
#include "process/producer_exit.hpp"

namespace tokenspeed::metrics {
namespace {

std::uint64_t number(const boost::json::object& json, std::string_view key) {
  const boost::json::value* value = json.if_contains(key);
  return value != nullptr && value->is_number() ? value->to_number<std::uint64_t>() : 0;
}

boost::json::object summary_json(const SinkFigures& figures) {
  boost::json::object json{{"name", figures.name},
                           {"failed", output_failed(figures)},
                           {"abandoned_in", figures.abandoned_in}};
  for (const SinkFiguresCount& count : kSinkFiguresCounts) json[count.name] = figures.*count.field;
  for (const SinkFiguresState& state : kSinkFiguresStates) json[state.name] = figures.*state.field;
  if (figures.plugin.reported) {
    boost::json::object plugin;
    for (const PluginFiguresCount& count : kPluginFiguresCounts) {
      plugin[count.name] = figures.plugin.*count.field;
    }
    json["plugin"] = std::move(plugin);
  }
  return json;
}

bool json_flag(const boost::json::object& json, std::string_view key) {
  const auto* value = json.if_contains(key);
  return value != nullptr && value->is_bool() && value->get_bool();
}

std::string json_text(const boost::json::object& json, std::string_view key) {
  const auto* value = json.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->get_string()) : "";
}

// One output's figures as summary_json wrote them (or an older writer did).
SinkFigures sink_figures_of(const boost::json::object& json) {
  SinkFigures figures;
  figures.name = json_text(json, "name");
  for (const SinkFiguresCount& count : kSinkFiguresCounts) {
    figures.*count.field = number(json, count.name);
  }
  // An older writer's keys: "dropped_full", "dropped_disabled".
  if (!json.contains("dropped_ring_full")) figures.dropped_ring_full = number(json, "dropped_full");
  if (!json.contains("dropped_sink_disabled")) {
    figures.dropped_sink_disabled = number(json, "dropped_disabled");
  }
  for (const SinkFiguresState& state : kSinkFiguresStates) {
    figures.*state.field = json_flag(json, state.name);
  }
  figures.abandoned_in = json_text(json, "abandoned_in");
  if (const auto* plugin = json.if_contains("plugin"); plugin && plugin->is_object()) {
    figures.plugin.reported = true;
    for (const PluginFiguresCount& count : kPluginFiguresCounts) {
      figures.plugin.*count.field = number(plugin->get_object(), count.name);
    }
  }
  // A file without the detail (an older writer): "failed" alone.
  if (json_flag(json, "failed") && !output_failed(figures)) figures.disabled = true;
  return figures;
}

// One line on stderr through the rate-limited log: the launcher's table then
// shows this process as one that left no summary.
void log_summary_failure(const std::filesystem::path& path, const std::string& why) noexcept {
  try {
    FaultLog log("summary file '" + path.string() + "'", std::chrono::seconds(10), {});
    log.message("cannot be written (" + why + "); the exit table shows no figures for this process",
                FaultLog::Clock::now());
  } catch (...) {
    // No memory for the line: the table still shows the missing summary.
  }
}

}  // namespace

bool write_process_summary(const std::filesystem::path& dir,
                           const ProcessSummary& summary) noexcept {
  std::filesystem::path path;
  try {
    path = dir / ("summary-" + std::to_string(summary.pid) + ".json");
    boost::json::array outputs;
    for (const SinkFigures& s : summary.outputs) outputs.push_back(summary_json(s));
    const std::string text =
        boost::json::serialize(boost::json::object{{"process", summary.process},
                                                   {"pid", summary.pid},
                                                   {"outputs", std::move(outputs)},
                                                   {"unstored_series", summary.unstored.series},
                                                   {"unstored_events", summary.unstored.events}});
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      log_summary_failure(path, std::strerror(errno));
      return false;
    }
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    if (!ok) log_summary_failure(path, "short write");
    ::close(fd);
    return ok;
  } catch (const std::exception& error) {
    log_summary_failure(path, error.what());
    return false;
  } catch (...) {
    log_summary_failure(path, "unknown error");
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
    summary.unstored.series = number(object, "unstored_series");
    summary.unstored.events = number(object, "unstored_events");
    if (const auto* outputs = object.if_contains("outputs"); outputs && outputs->is_array()) {
      for (const boost::json::value& value : outputs->get_array()) {
        if (!value.is_object()) continue;
        const boost::json::object& o = value.get_object();
        summary.outputs.push_back(sink_figures_of(value.get_object()));
      }
    }
    summaries.push_back(std::move(summary));
  }
  std::sort(summaries.begin(), summaries.end(),
            [](const ProcessSummary& a, const ProcessSummary& b) { return a.process < b.process; });
  return summaries;
}

namespace {

bool plugin_lost_events(const SinkFigures& s) noexcept {
  return s.plugin.reported && s.plugin.lost != 0;
}

// Nothing of what the host delivered reached the back end, and some of it
// was given up on (not merely refused over a limit of the plugin).
bool nothing_delivered(const SinkFigures& s) noexcept {
  return plugin_lost_events(s) && s.plugin.sent == 0;
}

}  // namespace

bool output_failed(const SinkFigures& s) noexcept {
  return s.disabled || s.create_failed || s.close_failed || s.abandoned || nothing_delivered(s);
}

bool output_degraded(const SinkFigures& s) noexcept {
  return !output_failed(s) && plugin_lost_events(s);
}

namespace {

std::string base_status(const SinkFigures& s) {
  if (s.abandoned && s.abandoned_in == "close")
    return "failed: close ignored its timeout, abandoned at close";
  if (s.abandoned && !s.abandoned_in.empty())
    return "failed: stalled in " + s.abandoned_in + ", abandoned at close";
  if (s.abandoned) return "failed: stalled, abandoned at close (still inside a plugin call)";
  if (s.create_failed) return "failed: create_sink failed";
  if (s.disabled) return "failed: disabled (emit failed)";
  if (s.close_failed) return "failed: close failed";
  if (nothing_delivered(s)) return "failed: nothing delivered";
  if (output_degraded(s)) return "degraded";
  return "ok";
}

}  // namespace

std::string output_status(const SinkFigures& s) {
  std::string status = base_status(s);
  if (s.isolated && (s.helper_restarts != 0 || s.lost_in_helper != 0)) {
    status += " (isolated: sink helper restarted " + std::to_string(s.helper_restarts) +
              (s.helper_restarts == 1 ? " time, " : " times, ") + std::to_string(s.lost_in_helper) +
              (s.lost_in_helper == 1 ? " event" : " events") + " lost in it)";
  }
  if (s.plugin.reported && (s.plugin.refused != 0 || s.plugin.lost != 0)) {
    status += " (plugin: " + std::to_string(s.plugin.refused) + " refused, " +
              std::to_string(s.plugin.lost) + " lost)";
  }
  return status;
}

namespace {

std::string process_legend(const std::vector<ProcessSummary>& summaries,
                           const std::vector<ProducerProcess>& producers) {
  bool launcher = false;
  bool scheduler = false;
  bool frontend = false;
  auto note = [&](const std::string& process) {
    launcher = launcher || process == "launcher";
    scheduler = scheduler || process.rfind("scheduler-", 0) == 0;
    frontend = frontend || process == "frontend";
  };
  for (const ProcessSummary& summary : summaries) note(summary.process);
  for (const ProducerProcess& producer : producers) note(producer.name);
  std::string legend;
  if (launcher)
    legend +=
        "  launcher: the launcher process itself (its own sink; it records the engine's "
        "startup)\n";
  if (scheduler) legend += "  scheduler-N: the scheduler producer of data-parallel rank N\n";
  if (frontend) legend += "  frontend: the frontend producer (requests and their latencies)\n";
  return legend;
}

// What the plugins said of the events delivered to them, one line per
// process and output whose plugin reports its figures ("" when none does):
// "  scheduler-0 otlp: 1200 sent, 0 refused, 0 lost, 2 retries, 0 pending".
// Not in the table's columns: a row of it never reads as a row above.
std::string plugin_figures_lines(const std::vector<ProcessSummary>& summaries) {
  std::string lines;
  bool lost = false;
  for (const ProcessSummary& summary : summaries) {
    for (const SinkFigures& s : summary.outputs) {
      if (!s.plugin.reported) continue;
      lost = lost || plugin_lost_events(s);
      if (lines.empty())
        lines += "what the outputs' plugins report of the events delivered to them:\n";
      lines += "  " + summary.process + " " + s.name + ": " + std::to_string(s.plugin.sent) +
               " sent, " + std::to_string(s.plugin.refused) + " refused, " +
               std::to_string(s.plugin.lost) + " lost, " + std::to_string(s.plugin.retries) +
               " retries, " + std::to_string(s.plugin.pending) + " pending\n";
    }
  }
  if (!lines.empty()) {
    lines +=
        "  sent: accepted by the back end; refused: over a limit of the plugin (max_series) or "
        "not representable; lost: given up (rejected by the back end, queue full, close "
        "deadline); retries: failed attempts tried again; pending: not yet sent\n";
  }
  if (lost) {
    lines +=
        "  degraded: the plugin lost events but sent others; failed: nothing delivered: it lost "
        "events and sent none\n";
  }
  return lines;
}

// Where the Prometheus output's totals are: on /metrics, unless a process
// had no room for its metric file (then only their count is there).
std::string prometheus_totals_line(const std::vector<ProcessSummary>& summaries) {
  UnstoredFigures unstored;
  std::size_t processes = 0;
  for (const ProcessSummary& summary : summaries) {
    if (summary.unstored.series == 0) continue;
    ++processes;
    unstored.series += summary.unstored.series;
    unstored.events += summary.unstored.events;
  }
  if (processes == 0) return "its totals are on /metrics";
  return "its totals are on /metrics except " + std::to_string(unstored.events) + " events of " +
         std::to_string(unstored.series) + " series that " + std::to_string(processes) +
         " process(es) could not store (no room for their metric files): "
         "tokenspeed_metrics_prometheus_unstored_events_total counts them";
}

}  // namespace

std::string format_summary_table(const std::vector<ProcessSummary>& summaries,
                                 const std::vector<ProducerProcess>& producers) {
  // Producers that wrote no summary: they did not reach their own close.
  std::vector<const ProducerProcess*> missing;
  for (const ProducerProcess& producer : producers) {
    const bool reported =
        std::any_of(summaries.begin(), summaries.end(),
                    [&](const ProcessSummary& s) { return s.pid == producer.pid; });
    if (!reported) missing.push_back(&producer);
  }
  const bool any_output = std::any_of(summaries.begin(), summaries.end(),
                                      [](const ProcessSummary& s) { return !s.outputs.empty(); });

  std::string table;
  char line[512];
  if (!any_output) {
    table += "outputs: Prometheus only (no external output selected); " +
             prometheus_totals_line(summaries) + "\n";
    for (const ProducerProcess* producer : missing) {
      table += "producer '" + producer->name + "' (pid " + std::to_string(producer->pid) +
               "): " + producer_row_status(*producer) + "\n";
    }
    return table;
  }
  std::snprintf(line, sizeof line, "%-14s %-8s %-12s %12s %12s %10s %10s  %s\n", "process", "pid",
                "output", "accepted", "delivered", "dropped", "discarded", "status");
  table += line;
  for (const ProcessSummary& summary : summaries) {
    for (const SinkFigures& s : summary.outputs) {
      std::snprintf(
          line, sizeof line, "%-14s %-8d %-12s %12llu %12llu %10llu %10llu  %s\n",
          summary.process.c_str(), static_cast<int>(summary.pid), s.name.c_str(),
          static_cast<unsigned long long>(s.accepted), static_cast<unsigned long long>(s.delivered),
          static_cast<unsigned long long>(s.dropped_ring_full + s.dropped_sink_disabled +
                                          s.dropped_after_close + s.lost_in_helper),
          static_cast<unsigned long long>(s.discarded_at_deadline), output_status(s).c_str());
      table += line;
    }
  }
  for (const ProducerProcess* producer : missing) {
    std::snprintf(line, sizeof line, "%-14s %-8d %-12s %12s %12s %10s %10s  %s\n",
                  producer->name.c_str(), static_cast<int>(producer->pid), "-", "-", "-", "-", "-",
                  producer_row_status(*producer).c_str());
    table += line;
  }
  table += process_legend(summaries, producers);
  table +=
      "  accepted = delivered + dropped + discarded; dropped: ring full, output disabled or "
      "offered after close began; discarded: still queued when the shutdown budget ran out\n";
  table += plugin_figures_lines(summaries);
  const bool any_isolated = std::any_of(summaries.begin(), summaries.end(), [](const auto& s) {
    return std::any_of(s.outputs.begin(), s.outputs.end(),
                       [](const SinkFigures& o) { return o.isolated; });
  });
  if (any_isolated) {
    table +=
        "  isolated: the output's sink runs in a helper process (\"isolation\": \"process\"); "
        "events lost in a helper that crashed or hung count in dropped\n";
  }
  return table;
}

}  // namespace tokenspeed::metrics
