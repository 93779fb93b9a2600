// metric_views.cpp — the views file read strictly (JSON, or YAML turned into
// the same JSON), and views applied to a definition. Startup path only;
// never touched by inc/set/observe.
#include "config/metric_views.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>

#include "config/metrics_flag_table.hpp"
#include "config/strict_yaml.hpp"
#include "config/yaml_json.hpp"
#include "core/bounded_file.hpp"
#include "core/input_excerpt.hpp"
#include "core/series_bound.hpp"
#include "core/startup_error.hpp"
#include "core/strict_json.hpp"

namespace tokenspeed::metrics {
namespace {

namespace json = boost::json;

struct Reader {
  const std::string& file;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const {
    throw StartupError({"", file, key}, message);
  }

  const json::object& object(const json::value& value, const std::string& key,
                             std::initializer_list<std::string_view> known) const {
    if (!value.is_object()) fail(key, "must be an object");
    for (const auto& member : value.get_object()) {
      if (std::find(known.begin(), known.end(), member.key()) == known.end()) {
        std::string list;
        for (const std::string_view name : known)
          list += (list.empty() ? "" : ", ") + std::string(name);
        fail(key.empty() ? std::string(member.key()) : key + "." + std::string(member.key()),
             "unknown key (known: " + list + ")");
      }
    }
    return value.get_object();
  }

  std::string text(const json::value& value, const std::string& key) const {
    if (!value.is_string()) fail(key, "must be a string");
    return std::string(value.get_string());
  }

  double number(const json::value& value, const std::string& key) const {
    if (value.is_double()) return value.get_double();
    if (value.is_int64()) return static_cast<double>(value.get_int64());
    if (value.is_uint64()) return static_cast<double>(value.get_uint64());
    fail(key, "must be a number");
  }

  long long whole(const json::value& value, const std::string& key) const {
    if (value.is_int64()) return value.get_int64();
    fail(key, "must be a whole number");
  }

  bool boolean(const json::value& value, const std::string& key) const {
    if (!value.is_bool()) fail(key, "must be true or false");
    return value.get_bool();
  }

  std::vector<std::string> texts(const json::value& value, const std::string& key) const {
    if (!value.is_array()) fail(key, "must be an array of strings");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < value.get_array().size(); ++i) {
      out.push_back(text(value.get_array()[i], key + "[" + std::to_string(i) + "]"));
    }
    return out;
  }
};

MetricKind kind_from_text(const Reader& in, const std::string& text, const std::string& key) {
  for (const MetricKind kind :
       {MetricKind::counter, MetricKind::gauge, MetricKind::histogram, MetricKind::summary}) {
    if (to_string(kind) == text) return kind;
  }
  in.fail(key, "'" + input_excerpt(text) + "' is not a kind (counter, gauge, histogram, summary)");
}

// The exposition's rules, as checked_definition applies them to an engine's
// definition: a gauge of that name (or with those labels) must pass them.
void check_names(const Reader& in, const std::string& key, const std::string& name,
                 const std::vector<std::string>& labels) {
  try {
    MetricDefinition gauge;
    gauge.name = name;
    gauge.kind = MetricKind::gauge;
    gauge.label_names = labels;
    static_cast<void>(checked_definition(std::move(gauge)));
  } catch (const std::invalid_argument& error) {
    in.fail(key, error.what());
  }
}

void read_select(const Reader& in, const json::value& value, const std::string& key,
                 MetricView& view) {
  const json::object& select = in.object(value, key, {"name", "kind"});
  const json::value* name = select.if_contains("name");
  if (name == nullptr) in.fail(key + ".name", "is required (an exact name or a glob)");
  view.select_name = in.text(*name, key + ".name");
  if (view.select_name.empty()) in.fail(key + ".name", "must not be empty");
  if (const json::value* kind = select.if_contains("kind")) {
    view.select_kind = kind_from_text(in, in.text(*kind, key + ".kind"), key + ".kind");
  }
}

std::vector<double> read_buckets(const Reader& in, const json::value& value,
                                 const std::string& key) {
  if (!value.is_array() || value.get_array().empty()) {
    in.fail(key, "must be a non-empty array of numbers");
  }
  std::vector<double> bounds;
  for (std::size_t i = 0; i < value.get_array().size(); ++i) {
    const std::string at = key + "[" + std::to_string(i) + "]";
    const double bound = in.number(value.get_array()[i], at);
    if (!std::isfinite(bound) || (!bounds.empty() && !(bounds.back() < bound))) {
      in.fail(at, "bucket bounds must be finite and strictly ascending");
    }
    bounds.push_back(bound);
  }
  return bounds;
}

ExponentialHistogramOptions read_exponential(const Reader& in, const json::value& value,
                                             const std::string& key) {
  const json::object& object =
      in.object(value, key, {"max_scale", "max_buckets", "zero_threshold"});
  ExponentialHistogramOptions options;
  if (const json::value* scale = object.if_contains("max_scale")) {
    const long long v = in.whole(*scale, key + ".max_scale");
    if (v < -10 || v > 20) in.fail(key + ".max_scale", "must be between -10 and 20");
    options.max_scale = static_cast<std::int32_t>(v);
  }
  if (const json::value* buckets = object.if_contains("max_buckets")) {
    const long long v = in.whole(*buckets, key + ".max_buckets");
    if (v < kMinExponentialBuckets || v > kMaxExponentialBuckets) {
      in.fail(key + ".max_buckets", "must be between " + std::to_string(kMinExponentialBuckets) +
                                        " and " + std::to_string(kMaxExponentialBuckets));
    }
    options.max_buckets = static_cast<std::uint32_t>(v);
  }
  if (const json::value* zero = object.if_contains("zero_threshold")) {
    options.zero_threshold = in.number(*zero, key + ".zero_threshold");
    if (!std::isfinite(options.zero_threshold) || options.zero_threshold < 0) {
      in.fail(key + ".zero_threshold", "must be a finite number >= 0");
    }
  }
  return options;
}

void read_aggregation(const Reader& in, const json::object& object, const std::string& key,
                      MetricView& view) {
  if (const json::value* aggregation = object.if_contains("aggregation")) {
    const std::string text = in.text(*aggregation, key + ".aggregation");
    if (text == "classic") {
      view.aggregation = ViewAggregation::classic;
    } else if (text == "exponential") {
      view.aggregation = ViewAggregation::exponential;
    } else {
      in.fail(key + ".aggregation", "must be classic or exponential");
    }
  }
  if (const json::value* buckets = object.if_contains("buckets")) {
    view.buckets = read_buckets(in, *buckets, key + ".buckets");
    if (view.aggregation == ViewAggregation::exponential) {
      in.fail(key + ".buckets", "an exponential aggregation takes no bucket bounds");
    }
    view.aggregation = ViewAggregation::classic;
  }
  if (const json::value* exponential = object.if_contains("exponential")) {
    view.exponential = read_exponential(in, *exponential, key + ".exponential");
    if (view.aggregation == ViewAggregation::classic) {
      in.fail(key + ".exponential", "a classic aggregation takes no exponential options");
    }
    view.aggregation = ViewAggregation::exponential;
  }
  if (view.aggregation != ViewAggregation::unchanged && view.select_kind &&
      *view.select_kind != MetricKind::histogram) {
    in.fail(key + ".select.kind", "buckets and aggregation apply to histograms only");
  }
}

void read_renaming(const Reader& in, const json::object& object, const std::string& key,
                   MetricView& view) {
  if (const json::value* name = object.if_contains("name")) {
    view.name = in.text(*name, key + ".name");
    if (view.select_name.find_first_of("*?") != std::string::npos) {
      in.fail(key + ".name", "a view that renames must select one family by its exact name");
    }
    check_names(in, key + ".name", *view.name, {});
  }
  if (const json::value* help = object.if_contains("help"))
    view.help = in.text(*help, key + ".help");
}

void read_labels_and_outputs(const Reader& in, const json::object& object, const std::string& key,
                             MetricView& view) {
  if (const json::value* keep = object.if_contains("keep_labels")) {
    view.keep_labels = in.texts(*keep, key + ".keep_labels");
    check_names(in, key + ".keep_labels", "label_check", *view.keep_labels);
  }
  if (const json::value* drop = object.if_contains("drop_labels")) {
    if (view.keep_labels)
      in.fail(key + ".drop_labels", "give keep_labels or drop_labels, not both");
    view.drop_labels = in.texts(*drop, key + ".drop_labels");
    check_names(in, key + ".drop_labels", "label_check", view.drop_labels);
  }
  if (const json::value* outputs = object.if_contains("outputs")) {
    view.outputs = in.texts(*outputs, key + ".outputs");
    for (std::size_t i = 0; i < view.outputs->size(); ++i) {
      if ((*view.outputs)[i].empty()) {
        in.fail(key + ".outputs[" + std::to_string(i) + "]", "must name an output");
      }
    }
  }
  if (const json::value* drop = object.if_contains("drop"))
    view.drop = in.boolean(*drop, key + ".drop");
  if (const json::value* limit = object.if_contains("cardinality_limit")) {
    const long long v = in.whole(*limit, key + ".cardinality_limit");
    if (v < 1 || static_cast<unsigned long long>(v) > kMaxSeriesPerFamilyLimit) {
      in.fail(key + ".cardinality_limit",
              "must be between 1 and " + std::to_string(kMaxSeriesPerFamilyLimit));
    }
    view.cardinality_limit = static_cast<std::size_t>(v);
  }
}

MetricView read_view(const Reader& in, const json::value& value, const std::string& key) {
  const json::object& object =
      in.object(value, key,
                {"select", "name", "help", "aggregation", "buckets", "exponential", "keep_labels",
                 "drop_labels", "outputs", "drop", "cardinality_limit"});
  MetricView view;
  const json::value* select = object.if_contains("select");
  if (select == nullptr) in.fail(key + ".select", "is required");
  read_select(in, *select, key + ".select", view);
  read_aggregation(in, object, key, view);
  read_renaming(in, object, key, view);
  read_labels_and_outputs(in, object, key, view);
  return view;
}

// Glob of '*' (any run) and '?' (any one character).
bool glob_match(std::string_view pattern, std::string_view text) noexcept {
  std::size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

void apply_aggregation(const MetricView& view, MetricDefinition& definition) {
  if (definition.kind != MetricKind::histogram) return;
  if (view.aggregation == ViewAggregation::classic) {
    definition.exponential.reset();
    definition.buckets = view.buckets.value_or(std::vector<double>{});
  } else if (view.aggregation == ViewAggregation::exponential) {
    definition.exponential = view.exponential.value_or(ExponentialHistogramOptions{});
    definition.buckets.clear();  // the powers of two, for plugins that aggregate classic buckets
  }
}

void apply_labels(const MetricView& view, const MetricDefinition& engine,
                  ViewedDefinition& viewed) {
  if (!view.keep_labels && view.drop_labels.empty()) return;
  std::vector<std::size_t> kept;
  for (const std::size_t index : viewed.kept_labels) {
    const std::string& label = engine.label_names[index];
    const bool listed = [&](const std::vector<std::string>& list) {
      return std::find(list.begin(), list.end(), label) != list.end();
    }(view.keep_labels ? *view.keep_labels : view.drop_labels);
    if (listed == view.keep_labels.has_value()) kept.push_back(index);
  }
  viewed.kept_labels = std::move(kept);
  viewed.labels_changed = true;
}

// message, followed by where it is in the file when that is known and the
// message does not say it already (a syntax error gives line and column).
std::string at_line(const std::string& message, std::size_t line) {
  if (line == 0 || message.find("(line ") != std::string::npos) return message;
  return message + " (line " + std::to_string(line) + ")";
}

// A YAML views file: the tree, as JSON, through the one reader of views; an
// error of that reader is given the line of its key.
MetricViews views_from_yaml(std::string_view text, const std::string& file) {
  YamlNode root;
  json::value value;
  try {
    root = parse_strict_yaml(text);
    value = yaml_to_json(root);
  } catch (const StrictYamlError& error) {
    throw StartupError({"", file, error.key_path()}, at_line(error.what(), error.line()));
  }
  try {
    return metric_views_from_json(value, file);
  } catch (const StartupError& error) {
    throw StartupError(error.context(), at_line(error.message(), yaml_line_of(root, error.key())));
  }
}

}  // namespace

MetricViews metric_views_from_json(const boost::json::value& value, const std::string& file) {
  const Reader in{file};
  const json::object& top = in.object(value, "", {"views"});
  MetricViews views;
  views.file = file;
  views.json = value;
  const json::value* list = top.if_contains("views");
  if (list == nullptr) return views;
  if (!list->is_array()) in.fail("views", "must be an array of views");
  for (std::size_t i = 0; i < list->get_array().size(); ++i) {
    views.views.push_back(read_view(in, list->get_array()[i], "views[" + std::to_string(i) + "]"));
  }
  return views;
}

ViewsForm views_form(std::string_view file, std::string_view text) noexcept {
  const std::size_t dot = file.rfind('.');
  const std::size_t slash = file.rfind('/');
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
    const std::string_view extension = file.substr(dot + 1);
    // ASCII case only: the locale of an embedding engine must not decide.
    const auto is = [extension](std::string_view lower) {
      return std::equal(
          extension.begin(), extension.end(), lower.begin(), lower.end(),
          [](char a, char b) { return (a >= 'A' && a <= 'Z' ? a - 'A' + 'a' : a) == b; });
    };
    if (is("yaml") || is("yml")) return ViewsForm::yaml;
    if (is("json")) return ViewsForm::json;
  }
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' ? ViewsForm::json : ViewsForm::yaml;
}

MetricViews metric_views_from_text(std::string_view text, const std::string& file) {
  if (views_form(file, text) == ViewsForm::yaml) return views_from_yaml(text, file);
  json::value parsed;
  try {
    parsed = parse_strict_json(text);
  } catch (const StrictJsonError& error) {
    throw StartupError({"", file, error.key_path()}, error.what());
  }
  return metric_views_from_json(parsed, file);
}

MetricViews read_metric_views(const std::string& path) {
  const std::string flag = flag_spelling(metrics_flag(&Options::metric_views));
  std::string text;
  try {
    text = read_bounded_file(path, kConfigurationFileLimit);
  } catch (const FileReadError& error) {
    throw StartupError({"", path, flag}, std::string("the views file ") + error.what());
  }
  return metric_views_from_text(text, path);
}

std::string family_name(const MetricDefinition& definition) {
  if (definition.kind == MetricKind::counter && definition.name.size() > 6 &&
      definition.name.ends_with("_total")) {
    return definition.name.substr(0, definition.name.size() - 6);
  }
  return definition.name;
}

bool view_selects(const MetricView& view, const MetricDefinition& definition) {
  // The host's own families count what the outputs did; a view never hides them.
  if (definition.name.starts_with(kHostFamilyPrefix)) return false;
  if (view.select_kind && *view.select_kind != definition.kind) return false;
  return glob_match(view.select_name, family_name(definition));
}

ViewedDefinition apply_views(const MetricViews& views, const MetricDefinition& definition) {
  ViewedDefinition viewed;
  viewed.definition = definition;
  viewed.engine_label_count = definition.label_names.size();
  for (std::size_t i = 0; i < definition.label_names.size(); ++i) viewed.kept_labels.push_back(i);
  for (const MetricView& view : views.views) {
    if (!view_selects(view, definition)) continue;
    if (view.drop) viewed.dropped = true;
    if (view.name) viewed.definition.name = *view.name;
    if (view.help) viewed.definition.help = *view.help;
    apply_aggregation(view, viewed.definition);
    apply_labels(view, definition, viewed);
    if (view.outputs) viewed.outputs = view.outputs;
    if (view.cardinality_limit) viewed.cardinality_limit = view.cardinality_limit;
  }
  viewed.labels_changed = viewed.kept_labels.size() != definition.label_names.size() ||
                          viewed.cardinality_limit.has_value();
  if (viewed.labels_changed) {
    viewed.definition.label_names.clear();
    for (const std::size_t index : viewed.kept_labels) {
      viewed.definition.label_names.push_back(definition.label_names[index]);
    }
    // An engine label of that name makes two: checked_definition refuses it.
    if (viewed.cardinality_limit) viewed.definition.label_names.emplace_back(kOverflowLabel);
  } else {
    viewed.kept_labels.clear();
  }
  return viewed;
}

std::string describe_viewed(const ViewedDefinition& viewed) {
  std::string line = viewed.definition.name + " " + std::string(to_string(viewed.definition.kind));
  if (viewed.dropped) return line + " dropped";
  MetricDefinition checked;
  try {
    checked = checked_definition(viewed.definition);
  } catch (const std::invalid_argument& error) {
    return line + " invalid: " + error.what();
  }
  line = checked.name + " " + std::string(to_string(checked.kind));
  auto list = [](const auto& items) {
    std::ostringstream out;
    out << '[';
    for (std::size_t i = 0; i < items.size(); ++i) out << (i ? "," : "") << items[i];
    out << ']';
    return out.str();
  };
  if (checked.kind == MetricKind::histogram) {
    if (checked.exponential) {
      line += " exponential(max_scale=" + std::to_string(checked.exponential->max_scale) +
              ",max_buckets=" + std::to_string(checked.exponential->max_buckets) + ")";
    } else {
      line += " buckets=" + list(checked.buckets);
    }
  }
  line += " labels=" + list(checked.label_names);
  line += " outputs=" + (viewed.outputs ? list(*viewed.outputs) : std::string("all"));
  if (viewed.cardinality_limit)
    line += " cardinality_limit=" + std::to_string(*viewed.cardinality_limit);
  line += " help=\"";
  for (const char c : checked.help) {
    if (c == '\\' || c == '"') line += '\\';
    line += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return line + '"';
}

std::vector<std::string> unused_view_warnings(const MetricViews& views,
                                              const std::vector<MetricDefinition>& definitions,
                                              const std::string& engine_exposition) {
  std::vector<std::string> warnings;
  for (std::size_t i = 0; i < views.views.size(); ++i) {
    const MetricView& view = views.views[i];
    const bool used =
        std::any_of(definitions.begin(), definitions.end(),
                    [&view](const MetricDefinition& d) { return view_selects(view, d); });
    if (!used) {
      const std::string selection = " ('" + input_excerpt(view.select_name) + "')";
      warnings.push_back(StartupError::format(
          {"", views.file, "views[" + std::to_string(i) + "].select"},
          engine_exposition.empty()
              ? "selects no family of the TokenSpeed catalog" + selection +
                    "; it applies only if the engine defines such a family"
              : "selects no family of the TokenSpeed catalog or of the engine's exposition '" +
                    input_excerpt(engine_exposition) + "'" + selection));
    }
  }
  return warnings;
}

namespace {

// The index of the last view that selects definition and renames it.
std::size_t renaming_view(const MetricViews& views, const MetricDefinition& definition) {
  std::size_t index = 0;
  for (std::size_t i = 0; i < views.views.size(); ++i) {
    if (views.views[i].name && view_selects(views.views[i], definition)) index = i;
  }
  return index;
}

}  // namespace

std::vector<std::string> rename_clash_warnings(const MetricViews& views,
                                               const std::vector<MetricDefinition>& definitions) {
  struct Held {
    const MetricDefinition* engine;
    MetricDefinition viewed;
    bool renamed;
  };
  std::map<std::string, std::vector<Held>> by_name;
  std::set<std::string> seen;
  for (const MetricDefinition& definition : definitions) {
    if (!seen.insert(definition.name).second) continue;
    ViewedDefinition viewed = apply_views(views, definition);
    if (viewed.dropped) continue;
    try {
      MetricDefinition checked = checked_definition(viewed.definition);
      const bool renamed = viewed.definition.name != definition.name;
      by_name[checked.name].push_back({&definition, std::move(checked), renamed});
    } catch (const std::invalid_argument&) {
      // describe_viewed says why.
    }
  }
  std::vector<std::string> warnings;
  for (const auto& named : by_name) {
    const std::string& name = named.first;
    const std::vector<Held>& held = named.second;  // a reference a lambda can capture
    const auto renamed =
        std::find_if(held.begin(), held.end(), [](const Held& h) { return h.renamed; });
    if (held.size() < 2 || renamed == held.end()) continue;
    const bool alike = std::all_of(held.begin(), held.end(), [&held](const Held& h) {
      return h.viewed == held.front().viewed &&
             h.engine->label_names == held.front().engine->label_names;
    });
    if (alike) continue;
    std::string families;
    for (const Held& h : held)
      families += (families.empty() ? "'" : ", '") + input_excerpt(h.engine->name) + "'";
    warnings.push_back(StartupError::format(
        {"", views.file,
         "views[" + std::to_string(renaming_view(views, *renamed->engine)) + "].name"},
        "gives the name '" + input_excerpt(name) + "' to families defined differently (" +
            families +
            "): in a process that defines both, the one defined later keeps its engine name, or "
            "records nothing when the name was its own (counted in "
            "tokenspeed_metrics_view_renames_refused_total)"));
  }
  return warnings;
}

std::vector<std::string> unselected_output_warnings(const MetricViews& views,
                                                    const std::vector<std::string>& selected) {
  std::vector<std::string> warnings;
  for (std::size_t i = 0; i < views.views.size(); ++i) {
    const auto& outputs = views.views[i].outputs;
    if (!outputs) continue;
    for (std::size_t j = 0; j < outputs->size(); ++j) {
      const std::string& name = (*outputs)[j];
      if (std::find(selected.begin(), selected.end(), name) != selected.end()) continue;
      warnings.push_back(StartupError::format(
          {"", views.file, "views[" + std::to_string(i) + "].outputs[" + std::to_string(j) + "]"},
          "'" + input_excerpt(name) +
              "' is not a selected output; the family reaches only the "
              "selected outputs the view names"));
    }
  }
  return warnings;
}

bool reaches_output(const std::optional<std::vector<std::string>>& outputs,
                    std::string_view output) noexcept {
  if (!outputs) return true;
  return std::find(outputs->begin(), outputs->end(), output) != outputs->end();
}

}  // namespace tokenspeed::metrics
