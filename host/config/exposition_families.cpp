// exposition_families.cpp — a text exposition read line by line into its
// families' definitions; values are parsed to check the line, never kept.
// Startup path only (`check`); never part of a running node.
#include "config/exposition_families.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "core/bounded_file.hpp"
#include "core/input_excerpt.hpp"
#include "core/startup_error.hpp"

namespace tokenspeed::metrics {
namespace {

// What a TYPE line makes of a family.
enum class Role {
  untyped,   // no TYPE line yet (a HELP line, or samples without one)
  recorded,  // counter, gauge, histogram, summary
  left_out,  // untyped, unknown, info, stateset, gaugehistogram
  created,   // prometheus_client's gauge family of another family's _created series
};

struct Family {
  std::string name;  // as the HELP or TYPE line writes it
  std::size_t line = 0;
  Role role = Role::untyped;
  std::string type;  // the TYPE line's word
  MetricKind kind = MetricKind::gauge;
  std::optional<std::string> help;
  bool has_samples = false;
  std::vector<std::string> labels;
  std::set<double> bounds;

  // The name a counter's samples are built on: without _total.
  std::string base() const {
    if (type == "counter" && name.size() > 6 && name.ends_with("_total"))
      return name.substr(0, name.size() - 6);
    return name;
  }
};

bool is_blank(char c) { return c == ' ' || c == '\t'; }

bool is_name_char(char c, bool colon_allowed, bool first) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         (colon_allowed && c == ':') || (!first && c >= '0' && c <= '9');
}

bool same_text_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// A number as Go's ParseFloat reads a sample value: decimal, "NaN", "Inf"
// and "+Inf"/"-Inf" in any case.
bool parse_number(std::string_view token, double& value) {
  std::string_view body = token;
  bool negative = false;
  if (!body.empty() && (body.front() == '+' || body.front() == '-')) {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (same_text_ignoring_case(body, "inf") || same_text_ignoring_case(body, "infinity")) {
    value = negative ? -std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::infinity();
    return true;
  }
  if (same_text_ignoring_case(body, "nan")) {
    value = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (body.empty() || !((body.front() >= '0' && body.front() <= '9') || body.front() == '.'))
    return false;
  const auto [end, error] = std::from_chars(body.data(), body.data() + body.size(), value);
  if (error != std::errc() || end != body.data() + body.size()) return false;
  if (negative) value = -value;
  return true;
}

// A HELP text unescaped: "\\" and "\n" (and OpenMetrics' "\""); any other
// backslash is kept, as prometheus_client's parser keeps it.
std::string unescape_help(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\\' && i + 1 < text.size()) {
      const char next = text[i + 1];
      if (next == '\\' || next == '"' || next == 'n') {
        out.push_back(next == 'n' ? '\n' : next);
        ++i;
        continue;
      }
    }
    out.push_back(c);
  }
  return out;
}

// One line being read, left to right.
struct Cursor {
  std::string_view text;
  std::size_t at = 0;

  bool done() const { return at >= text.size(); }
  char peek() const { return text[at]; }
  void skip_blanks() {
    while (!done() && is_blank(peek())) ++at;
  }
  std::string_view token() {
    const std::size_t start = at;
    while (!done() && !is_blank(peek())) ++at;
    return text.substr(start, at - start);
  }
  std::string_view name(bool colon_allowed) {
    const std::size_t start = at;
    while (!done() && is_name_char(peek(), colon_allowed, at == start)) ++at;
    return text.substr(start, at - start);
  }
  std::string_view rest() const { return done() ? std::string_view() : text.substr(at); }
};

// A sample line's parts that the families need.
struct Sample {
  std::string_view name;
  std::vector<std::pair<std::string_view, std::string>> labels;
};

class ExpositionReader {
 public:
  explicit ExpositionReader(const std::string& file) : file_(file) {}

  void read(std::string_view text);
  ExpositionFamilies finish() const;

 private:
  [[noreturn]] void fail(std::size_t line, const std::string& message) const {
    throw StartupError({"", file_, "line " + std::to_string(line)}, message);
  }
  [[noreturn]] void fail(const std::string& message) const { fail(line_, message); }
  std::string note(const Family& family, const std::string& message) const {
    return StartupError::format({"", file_, "line " + std::to_string(family.line)}, message);
  }

  void read_line(std::string_view line);
  void read_comment(Cursor& in);
  void read_help(std::string_view name, std::string_view text);
  void read_type(std::string_view name, std::string_view type);
  void claim_samples(std::size_t index);
  void claim(const std::string& sample, std::size_t index);
  Sample parse_sample(Cursor& in) const;
  void parse_labels(Cursor& in, Sample& sample) const;
  std::string parse_quoted(Cursor& in) const;
  void parse_value_and_rest(Cursor& in) const;
  void read_sample(std::string_view line);
  void record_sample(Family& family, const Sample& sample) const;
  std::size_t family_named(std::string_view name);
  void add_definition(const Family& family, ExpositionFamilies& out) const;

  const std::string& file_;
  std::size_t line_ = 0;
  bool ended_ = false;
  std::vector<Family> families_;
  std::map<std::string, std::size_t, std::less<>> by_name_;
  std::map<std::string, std::size_t, std::less<>> by_sample_;
};

void ExpositionReader::read(std::string_view text) {
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    ++line_;
    read_line(line);
    start = end + 1;
  }
}

void ExpositionReader::read_line(std::string_view line) {
  Cursor in{line};
  in.skip_blanks();
  if (in.done()) return;
  if (ended_) fail("text after '# EOF'");
  if (in.peek() == '#') {
    ++in.at;
    read_comment(in);
    return;
  }
  read_sample(in.rest());
}

void ExpositionReader::read_comment(Cursor& in) {
  in.skip_blanks();
  const std::string_view word = in.token();
  if (word == "EOF") {
    in.skip_blanks();
    if (in.done()) ended_ = true;
    return;
  }
  if (word != "HELP" && word != "TYPE") return;  // a comment, or OpenMetrics' UNIT
  in.skip_blanks();
  const std::string_view name = in.token();
  if (name.empty()) fail("a # " + std::string(word) + " line without a metric name");
  Cursor check{name};
  if (check.name(true).size() != name.size())
    fail("'" + input_excerpt(name) + "' is not a metric name");
  in.skip_blanks();
  if (word == "HELP") {
    read_help(name, in.rest());
    return;
  }
  const std::string_view type = in.token();
  in.skip_blanks();
  if (type.empty()) fail("a # TYPE line without a type");
  if (!in.done()) fail("text after the type of '" + input_excerpt(name) + "'");
  read_type(name, type);
}

std::size_t ExpositionReader::family_named(std::string_view name) {
  const auto found = by_name_.find(name);
  if (found != by_name_.end()) return found->second;
  Family family;
  family.name = std::string(name);
  family.line = line_;
  families_.push_back(std::move(family));
  by_name_.emplace(std::string(name), families_.size() - 1);
  return families_.size() - 1;
}

void ExpositionReader::read_help(std::string_view name, std::string_view text) {
  Family& family = families_[family_named(name)];
  if (family.help) fail("a second # HELP line for '" + input_excerpt(name) + "'");
  family.help = unescape_help(text);
}

void ExpositionReader::read_type(std::string_view name, std::string_view type) {
  static const std::set<std::string_view> kRecorded{"counter", "gauge", "histogram", "summary"};
  static const std::set<std::string_view> kLeftOut{"untyped", "unknown", "info", "stateset",
                                                   "gaugehistogram"};
  if (kRecorded.count(type) == 0 && kLeftOut.count(type) == 0) {
    fail("'" + input_excerpt(type) +
         "' is not a type (counter, gauge, histogram, summary, untyped)");
  }
  const auto claimed = by_sample_.find(name);
  const std::size_t index = family_named(name);
  Family& family = families_[index];
  if (family.role != Role::untyped) fail("a second # TYPE line for '" + input_excerpt(name) + "'");
  if (family.has_samples)
    fail("the # TYPE line of '" + input_excerpt(name) + "' follows its samples");
  family.line = line_;
  family.type = std::string(type);
  if (claimed != by_sample_.end() && claimed->second != index) {
    // prometheus_client's format 0.0.4 writes a family's _created series as
    // a gauge family of their own, after the family.
    if (type == "gauge" && name.ends_with("_created")) {
      family.role = Role::created;
      return;
    }
    fail("'" + input_excerpt(name) + "' is a sample name of '" + families_[claimed->second].name +
         "' (line " + std::to_string(families_[claimed->second].line) + ")");
  }
  family.role = kRecorded.count(type) != 0 ? Role::recorded : Role::left_out;
  if (type == "counter") family.kind = MetricKind::counter;
  if (type == "histogram") family.kind = MetricKind::histogram;
  if (type == "summary") family.kind = MetricKind::summary;
  claim_samples(index);
}

// The sample names of a family, by its type. A counter's TYPE line names it
// with _total (format 0.0.4) or without (OpenMetrics): its samples are the
// name itself, base_total and base_created.
void ExpositionReader::claim_samples(std::size_t index) {
  const std::string type = families_[index].type;
  const std::string base = families_[index].base();
  std::vector<std::string> samples{families_[index].name};
  if (type == "counter") samples = {families_[index].name, base + "_total", base + "_created"};
  if (type == "summary") samples = {base, base + "_sum", base + "_count", base + "_created"};
  if (type == "histogram") {
    samples = {base + "_bucket", base + "_sum", base + "_count", base + "_created"};
  }
  if (type == "gaugehistogram") {
    samples = {base + "_bucket", base + "_gsum", base + "_gcount", base + "_created"};
  }
  if (type == "info") samples = {base + "_info"};
  for (const std::string& sample : samples) claim(sample, index);
}

void ExpositionReader::claim(const std::string& sample, std::size_t index) {
  const auto [at, inserted] = by_sample_.emplace(sample, index);
  if (inserted || at->second == index) return;
  const Family& other = families_[at->second];
  fail("the sample name '" + input_excerpt(sample) + "' of '" +
       input_excerpt(families_[index].name) + "' is also '" + input_excerpt(other.name) +
       "' (line " + std::to_string(other.line) + ")");
}

std::string ExpositionReader::parse_quoted(Cursor& in) const {
  std::string value;
  while (!in.done()) {
    const char c = in.peek();
    ++in.at;
    if (c == '"') return value;
    if (c == '\\') {
      if (in.done()) break;
      const char next = in.peek();
      ++in.at;
      value.push_back(next == 'n' ? '\n' : next);
      continue;
    }
    value.push_back(c);
  }
  fail("an unterminated label value");
}

void ExpositionReader::parse_labels(Cursor& in, Sample& sample) const {
  ++in.at;  // '{'
  for (;;) {
    in.skip_blanks();
    if (!in.done() && in.peek() == '}') break;
    const std::string_view label = in.name(false);
    if (label.empty()) fail("expected a label name or '}'");
    in.skip_blanks();
    if (in.done() || in.peek() != '=')
      fail("expected '=' after the label '" + std::string(label) + "'");
    ++in.at;
    in.skip_blanks();
    if (in.done() || in.peek() != '"')
      fail("expected '\"' to open the value of the label '" + std::string(label) + "'");
    ++in.at;
    for (const auto& [name, value] : sample.labels) {
      if (name == label) fail("the label '" + std::string(label) + "' is repeated");
    }
    sample.labels.emplace_back(label, parse_quoted(in));
    in.skip_blanks();
    if (!in.done() && in.peek() == ',') {
      ++in.at;
      continue;
    }
    if (in.done() || in.peek() != '}') fail("expected ',' or '}' after a label");
  }
  ++in.at;  // '}'
}

// The value, then an optional timestamp and an optional exemplar ("# {...}").
void ExpositionReader::parse_value_and_rest(Cursor& in) const {
  in.skip_blanks();
  const std::string_view value = in.token();
  double number = 0;
  if (value.empty()) fail("a sample without a value");
  if (!parse_number(value, number)) fail("'" + input_excerpt(value) + "' is not a sample value");
  in.skip_blanks();
  if (in.done() || in.peek() == '#') return;
  const std::string_view timestamp = in.token();
  if (!parse_number(timestamp, number) || !std::isfinite(number))
    fail("'" + input_excerpt(timestamp) + "' is not a timestamp");
  in.skip_blanks();
  if (!in.done() && in.peek() != '#') fail("text after the sample's timestamp");
}

Sample ExpositionReader::parse_sample(Cursor& in) const {
  Sample sample;
  sample.name = in.name(true);
  if (sample.name.empty()) fail("a line that is neither a comment nor a sample");
  if (!in.done() && in.peek() == '{') {
    parse_labels(in, sample);
  } else if (!in.done() && !is_blank(in.peek())) {
    fail("'" + input_excerpt(in.token()) + "' is not part of a metric name");
  }
  parse_value_and_rest(in);
  return sample;
}

void ExpositionReader::read_sample(std::string_view line) {
  Cursor in{line};
  const Sample sample = parse_sample(in);
  std::size_t index = 0;
  if (const auto claimed = by_sample_.find(sample.name); claimed != by_sample_.end()) {
    index = claimed->second;
  } else {
    index = family_named(sample.name);  // a family without a TYPE line
    by_sample_.emplace(std::string(sample.name), index);
  }
  Family& family = families_[index];
  family.has_samples = true;
  if (family.role == Role::recorded) record_sample(family, sample);
}

void ExpositionReader::record_sample(Family& family, const Sample& sample) const {
  const std::string base = family.base();
  if (sample.name == base + "_created") return;
  const bool bucket = family.kind == MetricKind::histogram && sample.name == base + "_bucket";
  bool has_bound = false;
  for (const auto& [label, value] : sample.labels) {
    if (family.kind == MetricKind::histogram && label == "le") {
      double bound = 0;
      if (!parse_number(value, bound) || std::isnan(bound))
        fail("the bucket bound le=\"" + input_excerpt(value) + "\" is not a number");
      if (std::isfinite(bound)) family.bounds.insert(bound);
      has_bound = true;
      continue;
    }
    if (family.kind == MetricKind::summary && label == "quantile") continue;
    if (std::find(family.labels.begin(), family.labels.end(), label) == family.labels.end())
      family.labels.emplace_back(label);
  }
  if (bucket && !has_bound) fail("a bucket of '" + input_excerpt(base) + "' without 'le'");
}

void ExpositionReader::add_definition(const Family& family, ExpositionFamilies& out) const {
  const std::string name = input_excerpt(family.name);
  if (family.role == Role::untyped) {
    out.notes.push_back(note(family, "'" + name + "' has no # TYPE line: left out (untyped)"));
    return;
  }
  if (family.role == Role::left_out) {
    out.notes.push_back(note(family, "'" + name + "' is of type " + family.type +
                                         ", which the host does not record: left out"));
    return;
  }
  MetricDefinition definition;
  definition.name = family.name;
  definition.kind = family.kind;
  definition.help = family.help.value_or("");
  definition.label_names = family.labels;
  definition.buckets.assign(family.bounds.begin(), family.bounds.end());
  try {
    out.families.push_back(checked_definition(std::move(definition)));
  } catch (const std::invalid_argument& error) {
    fail(family.line, error.what());
  }
  const bool histogram = family.kind == MetricKind::histogram;
  if (!family.has_samples) {
    out.notes.push_back(
        note(family, "'" + name + "' has no samples: its labels" +
                         (histogram ? " and buckets" : "") + " are not known" +
                         (histogram ? " (read as prometheus_client's default)" : "")));
  } else if (histogram && family.bounds.empty()) {
    out.notes.push_back(note(family, "'" + name +
                                         "' has no finite bucket: its buckets read as "
                                         "prometheus_client's default"));
  }
}

ExpositionFamilies ExpositionReader::finish() const {
  ExpositionFamilies out;
  out.file = file_;
  for (const Family& family : families_) {
    if (family.role != Role::created) add_definition(family, out);
  }
  return out;
}

}  // namespace

ExpositionFamilies exposition_families_from_text(std::string_view text, const std::string& file) {
  ExpositionReader reader(file);
  reader.read(text);
  return reader.finish();
}

ExpositionFamilies read_exposition_families(const std::string& path, const std::string& flag) {
  std::string text;
  try {
    text = read_bounded_file(path, kExpositionFileLimit);
  } catch (const FileReadError& error) {
    throw StartupError({"", path, flag}, std::string("the exposition ") + error.what());
  }
  return exposition_families_from_text(text, path);
}

}  // namespace tokenspeed::metrics
