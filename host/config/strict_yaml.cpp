// strict_yaml.cpp — the libyaml event stream into a YamlNode tree, with the
// rules of strict_yaml.hpp. Startup only.
#include "config/strict_yaml.hpp"

#include <yaml.h>

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "core/input_excerpt.hpp"

namespace tokenspeed::metrics {
namespace {

// Key equality that counts its calls (YamlParseFigures::key_comparisons).
struct CountingEqual {
  std::size_t* count;
  bool operator()(std::string_view a, std::string_view b) const noexcept {
    ++*count;
    return a == b;
  }
};
using KeySet = std::unordered_set<std::string, std::hash<std::string>, CountingEqual>;

class Parser {
 public:
  Parser(std::string_view text, YamlParseFigures& counts) : counts_(counts) {
    if (yaml_parser_initialize(&parser_) == 0) throw std::bad_alloc();
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~Parser() {
    if (has_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  YamlNode document() {
    expect(next(), YAML_STREAM_START_EVENT);
    YamlNode root;
    if (next() == YAML_STREAM_END_EVENT) return root;
    expect(type(), YAML_DOCUMENT_START_EVENT);
    root = node(next(), 0);
    expect(next(), YAML_DOCUMENT_END_EVENT);
    if (next() != YAML_STREAM_END_EVENT) {
      throw StrictYamlError("holds more than one YAML document", "", line());
    }
    return root;
  }

 private:
  yaml_event_type_t next() {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = false;
    if (yaml_parser_parse(&parser_, &event_) == 0) {
      std::string message = "not valid YAML: ";
      message += parser_.problem != nullptr ? parser_.problem : "syntax error";
      if (parser_.context != nullptr) message += std::string(" ") + parser_.context;
      throw StrictYamlError(message + " (line " + std::to_string(parser_.problem_mark.line + 1) +
                                ", column " + std::to_string(parser_.problem_mark.column + 1) + ")",
                            "", parser_.problem_mark.line + 1);
    }
    has_event_ = true;
    return event_.type;
  }
  yaml_event_type_t type() const { return event_.type; }
  // The current node event's explicit tag, "" when none.
  std::string tag() const {
    const yaml_char_t* tag = nullptr;
    if (event_.type == YAML_SCALAR_EVENT) tag = event_.data.scalar.tag;
    if (event_.type == YAML_SEQUENCE_START_EVENT) tag = event_.data.sequence_start.tag;
    if (event_.type == YAML_MAPPING_START_EVENT) tag = event_.data.mapping_start.tag;
    return tag != nullptr ? reinterpret_cast<const char*>(tag) : "";
  }
  std::size_t line() const { return event_.start_mark.line + 1; }
  void expect(yaml_event_type_t got, yaml_event_type_t wanted) const {
    if (got != wanted) throw StrictYamlError("unexpected YAML structure", "", line());
  }

  // The node that starts with event, at depth below the document.
  YamlNode node(yaml_event_type_t event, std::size_t depth) {
    YamlNode result;
    result.line = line();
    result.tag = tag();
    switch (event) {
      case YAML_ALIAS_EVENT:
        throw StrictYamlError("YAML aliases (*name) are not supported", path(), line());
      case YAML_SCALAR_EVENT:
        read_scalar(result);
        return result;
      case YAML_SEQUENCE_START_EVENT:
        check_depth(depth);
        read_sequence(result, depth);
        return result;
      case YAML_MAPPING_START_EVENT:
        check_depth(depth);
        read_mapping(result, depth);
        return result;
      default:
        throw StrictYamlError("unexpected YAML structure", path(), line());
    }
  }

  void read_scalar(YamlNode& result) const {
    const auto& scalar = event_.data.scalar;
    result.value.assign(reinterpret_cast<const char*>(scalar.value), scalar.length);
    result.quoted = scalar.style != YAML_PLAIN_SCALAR_STYLE;
    const bool null_word = result.value.empty() || result.value == "~" || result.value == "null" ||
                           result.value == "Null" || result.value == "NULL";
    result.kind = !result.quoted && null_word ? YamlNode::Kind::null : YamlNode::Kind::scalar;
  }

  void read_sequence(YamlNode& result, std::size_t depth) {
    result.kind = YamlNode::Kind::sequence;
    for (yaml_event_type_t item = next(); item != YAML_SEQUENCE_END_EVENT; item = next()) {
      const PathStep step(*this, "[" + std::to_string(result.items.size()) + "]");
      result.items.push_back(node(item, depth + 1));
    }
  }

  void read_mapping(YamlNode& result, std::size_t depth) {
    result.kind = YamlNode::Kind::mapping;
    KeySet keys(0, std::hash<std::string>(), CountingEqual{&counts_.key_comparisons});
    for (yaml_event_type_t key = next(); key != YAML_MAPPING_END_EVENT; key = next()) {
      if (key != YAML_SCALAR_EVENT) {
        throw StrictYamlError("a mapping key must be a plain string", path(), line());
      }
      std::string name(reinterpret_cast<const char*>(event_.data.scalar.value),
                       event_.data.scalar.length);
      const std::size_t key_line = line();
      const PathStep step(*this, steps_.empty() ? name : "." + name);
      if (!keys.insert(name).second) {
        throw StrictYamlError("duplicate key '" + input_excerpt(name) + "'", path(), line());
      }
      YamlNode value = node(next(), depth + 1);
      value.key_line = key_line;
      result.entries.push_back({std::move(name), std::move(value)});
    }
  }

  void check_depth(std::size_t depth) const {
    if (depth >= kYamlDepthLimit) {
      throw StrictYamlError("nested deeper than " + std::to_string(kYamlDepthLimit) + " levels",
                            path(), line());
    }
  }

  // The key path of the node being read ("a.b[2].c"), built only for an
  // error: each node keeps one step, so a long key is never copied once per
  // node below it.
  std::string path() const {
    std::string joined;
    for (const std::string& step : steps_) joined += step;
    return input_excerpt(joined);
  }

  // The step of one node into the path, for the node's reading.
  class PathStep {
   public:
    PathStep(Parser& parser, std::string step) : parser_(parser) {
      parser_.counts_.path_bytes += step.size();
      parser_.steps_.push_back(std::move(step));
    }
    ~PathStep() { parser_.steps_.pop_back(); }
    PathStep(const PathStep&) = delete;
    PathStep& operator=(const PathStep&) = delete;

   private:
    Parser& parser_;
  };

  YamlParseFigures& counts_;
  yaml_parser_t parser_{};
  yaml_event_t event_{};
  bool has_event_ = false;
  std::vector<std::string> steps_;  // the path to the node being read, a step per level
};

}  // namespace

YamlNode parse_strict_yaml(std::string_view text, YamlParseFigures* counts) {
  YamlParseFigures ignored;
  Parser parser(text, counts != nullptr ? *counts : ignored);
  return parser.document();
}

}  // namespace tokenspeed::metrics
