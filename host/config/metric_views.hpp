// metric_views.hpp — the views file (--metrics-views): what an operator
// changes of a family without touching the engine (buckets, exponential or
// classic, name, help, labels kept or dropped, which outputs receive it, or
// dropping it), read strictly from JSON or YAML, and applied to a definition
// where it is made.
// Startup path only: a view is resolved when a family is defined, never on
// the hot path.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json/value.hpp>
#include <tokenspeed/metric_reporter.h>

#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics {

// How a view sets a histogram's buckets.
enum class ViewAggregation { unchanged, classic, exponential };

// One view: a selection (an exact name or a glob of '*' and '?', matched
// against the family name, a counter's without _total, and optionally a
// kind) and what it changes.
struct MetricView {
  std::string select_name;
  std::optional<MetricKind> select_kind;
  std::optional<std::string> name;  // the family's new name (exact selections only)
  std::optional<std::string> help;
  ViewAggregation aggregation = ViewAggregation::unchanged;
  std::optional<std::vector<double>> buckets;  // classic bounds
  std::optional<ExponentialHistogramOptions> exponential;
  bool drop = false;
  std::optional<std::vector<std::string>> keep_labels;
  std::vector<std::string> drop_labels;
  std::optional<std::vector<std::string>> outputs;  // the outputs that receive the family
  // At most this many series per process, the overflow series included.
  std::optional<std::size_t> cardinality_limit;
};

struct MetricViews {
  std::string file;  // where they were read ("" when built in code)
  std::vector<MetricView> views;
  boost::json::value json;  // the file as read: what the handoff carries

  bool empty() const noexcept { return views.empty(); }
};

// A definition after the views that select it, in the file's order (a later
// view's setting wins over an earlier one's).
struct ViewedDefinition {
  MetricDefinition definition;  // not yet checked (checked_definition follows)
  bool dropped = false;
  // The engine's label index of each label the family keeps; empty when the
  // labels are the engine's.
  std::vector<std::size_t> kept_labels;
  bool labels_changed = false;
  std::size_t engine_label_count = 0;
  std::optional<std::vector<std::string>> outputs;  // unset: every output
  // Set: the family's labels end with kOverflowLabel (kept_labels then
  // lists every label kept, even when they are all the engine's), and a
  // process holds at most this many of its series, the overflow series
  // included (OpenTelemetry's cardinality limit).
  std::optional<std::size_t> cardinality_limit;
};

// The label of a capped family's series: "" but on its overflow series.
inline constexpr std::string_view kOverflowLabel = TSM_OVERFLOW_LABEL;
inline constexpr std::string_view kOverflowValue = "true";

// Reads views from parsed JSON ({"views": [...]}). Unknown keys, wrong types,
// bad names, bounds or options throw StartupError naming file and key.
MetricViews metric_views_from_json(const boost::json::value& json, const std::string& file);

// The two forms of a views file, which hold the same tree.
enum class ViewsForm { json, yaml };

// The form of the views file named file, holding text: YAML when the name
// ends in ".yaml" or ".yml", JSON when it ends in ".json" (in any case); a
// file of any other name is JSON when its first character that is not blank
// is '{' (as every JSON views file's is), otherwise YAML.
ViewsForm views_form(std::string_view file, std::string_view text) noexcept;

// Reads views from the text of the views file named file, in its form:
// strict JSON (duplicate keys refused) or strict YAML (config/strict_yaml:
// duplicate keys, aliases and tags refused) turned into the JSON it stands
// for (config/yaml_json), so that both are checked by metric_views_from_json
// and MetricViews::json holds JSON either way. A YAML file's errors also give
// the line. Throws StartupError naming file and key.
MetricViews metric_views_from_text(std::string_view text, const std::string& file);

// Reads the views file at path (metric_views_from_text).
MetricViews read_metric_views(const std::string& path);

// The host's own families (tokenspeed_metrics_*): no view selects them.
inline constexpr std::string_view kHostFamilyPrefix = "tokenspeed_metrics_";

// The name a view selects a family by: a counter's without _total.
std::string family_name(const MetricDefinition& definition);

// Whether a view selects a definition (as the engine gave it); never one of
// the host's own families.
bool view_selects(const MetricView& view, const MetricDefinition& definition);

// Applies every view that selects definition.
ViewedDefinition apply_views(const MetricViews& views, const MetricDefinition& definition);

// One line of `check`: a family as the views leave it ("name kind help=...
// buckets=... labels=... outputs=..." or "name kind dropped"), checked as an
// engine's definition is, its help escaped as the exposition escapes it (so
// the line stays one line); a definition the views make invalid reads
// "invalid: <why>".
std::string describe_viewed(const ViewedDefinition& viewed);

// A warning for each view that selects none of definitions: the TokenSpeed
// catalog's, and the engine's own read from the exposition engine_exposition
// names when check was given one. Without one ("") the warning says the view
// may select a family the engine defines itself, which check does not know.
std::vector<std::string> unused_view_warnings(const MetricViews& views,
                                              const std::vector<MetricDefinition>& definitions,
                                              const std::string& engine_exposition = "");

// A warning for each name views give to families of definitions defined
// differently (by kind, help, unit, labels, buckets or mode): a process that
// defines both keeps the later one's engine name, or records nothing of it
// when the name was its own (pipeline/view_renames.hpp).
std::vector<std::string> rename_clash_warnings(const MetricViews& views,
                                               const std::vector<MetricDefinition>& definitions);

// A warning for each output a view names that is not selected (selected:
// every selected output, "prometheus" included): a typo sends the family
// nowhere.
std::vector<std::string> unselected_output_warnings(const MetricViews& views,
                                                    const std::vector<std::string>& selected);

// The built-in output's name, as a view's outputs list it.
inline constexpr std::string_view kPrometheusOutput = "prometheus";

// Whether a family with these outputs (unset: all) reaches output.
bool reaches_output(const std::optional<std::vector<std::string>>& outputs,
                    std::string_view output) noexcept;

}  // namespace tokenspeed::metrics
