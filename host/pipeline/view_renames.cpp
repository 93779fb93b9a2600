// view_renames.cpp — the counter and the lines of view_renames.hpp.
#include "pipeline/view_renames.hpp"

#include <unistd.h>

#include "core/input_excerpt.hpp"

namespace tokenspeed::metrics {

const MetricDefinition& view_renames_refused_definition() {
  static const MetricDefinition definition{
      "tokenspeed_metrics_view_renames_refused",
      MetricKind::counter,
      "Engine families of a process that a view's new name could not apply to, because "
      "another family held that name (the family kept its engine name), or whose own name a "
      "view gave to another family (the family records nothing).",
      "families",
      {"family"},
      {},
      GaugeMode::livesum};
  return definition;
}

namespace {
std::string views_named(std::string_view views_file) {
  return views_file.empty() ? std::string("the views")
                            : "the views of " + input_excerpt(views_file);
}
}  // namespace

std::string rename_refused_line(std::string_view views_file, const MetricDefinition& engine,
                                std::string_view view_name, std::string_view clash) {
  return "tokenspeed-metrics: warning: " + views_named(views_file) + " (--metrics-views) name '" +
         input_excerpt(engine.name) + "' '" + input_excerpt(view_name) + "' in process " +
         std::to_string(::getpid()) + ", where " + std::string(clash) + ": it keeps the name '" +
         input_excerpt(engine.name) +
         "' here (counted in tokenspeed_metrics_view_renames_refused_total)";
}

std::string name_given_away_line(std::string_view views_file, const MetricDefinition& engine,
                                 std::string_view clash) {
  return "tokenspeed-metrics: warning: " + views_named(views_file) +
         " (--metrics-views) gave the name of the engine's metric '" + input_excerpt(engine.name) +
         "' to another family in process " + std::to_string(::getpid()) + ", where " +
         std::string(clash) +
         ": it records nothing here (counted in tokenspeed_metrics_view_renames_refused_total)";
}

}  // namespace tokenspeed::metrics
