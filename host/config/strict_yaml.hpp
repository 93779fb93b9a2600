// strict_yaml.hpp — reads a YAML configuration file (one document) into a
// plain tree with libyaml, refusing what a configuration must not hold: a key
// given twice, aliases (and so alias expansion), keys that are not scalars,
// more than one document, nesting deeper than a bound. Startup only; never
// resolves tags or types: the reader of each key decides what a scalar means
// (and whether a node may carry an explicit tag).
// libyaml rather than yaml-cpp 0.7: it is the reference parser (PyYAML's,
// fuzzed in OSS-Fuzz), its event stream lets the reader refuse duplicates and
// aliases before building anything and bound the depth without recursion in
// the parser, and it reports line and column; yaml-cpp accepts two equal
// keys silently and its parser recurses on nesting (stack overflows reported).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tokenspeed::metrics {

// The deepest nesting of mappings and sequences accepted.
inline constexpr std::size_t kYamlDepthLimit = 64;

struct YamlEntry;

struct YamlNode {
  enum class Kind { null, scalar, sequence, mapping };
  Kind kind = Kind::null;
  // A scalar's text (also of a null: "", "~", "null").
  std::string value;
  // A quoted or block scalar: always a string, never null, bool or number.
  bool quoted = false;
  // The node's explicit tag as libyaml resolves it ("!!str" is
  // "tag:yaml.org,2002:str"), "" when it has none.
  std::string tag;
  // Where the node starts, 1-based.
  std::size_t line = 0;
  // A mapping value's: where its key is, 1-based.
  std::size_t key_line = 0;
  // A sequence's items.
  std::vector<YamlNode> items;
  // A mapping's entries, in the file's order; keys are unique.
  std::vector<YamlEntry> entries;
};

// One entry of a mapping.
struct YamlEntry {
  std::string key;
  YamlNode value;
};

// A file that is not valid YAML or breaks one of the rules above. key_path is
// the path of the mapping key at fault ("a.b[2].c"), "" when none.
class StrictYamlError : public std::runtime_error {
 public:
  StrictYamlError(const std::string& message, std::string key_path, std::size_t line)
      : std::runtime_error(message), key_path_(std::move(key_path)), line_(line) {}
  const std::string& key_path() const noexcept { return key_path_; }
  std::size_t line() const noexcept { return line_; }

 private:
  std::string key_path_;
  std::size_t line_;
};

// What a parse did, counted for the tests that prove its cost grows with the
// file's size, never with its square.
struct YamlParseFigures {
  std::size_t key_comparisons = 0;  // keys compared while refusing duplicates
  std::size_t path_bytes = 0;       // bytes of the key-path steps kept for errors
};

// The first and only document of text; an empty text (or one of only
// comments) is a null node. Throws StrictYamlError. Time and memory are
// linear in the size of text: a mapping's duplicate keys are found through a
// hash set, not by comparing each key with every earlier one.
YamlNode parse_strict_yaml(std::string_view text, YamlParseFigures* counts = nullptr);

}  // namespace tokenspeed::metrics
