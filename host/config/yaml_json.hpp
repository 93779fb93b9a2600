// yaml_json.hpp — a strict YAML tree (config/strict_yaml) as the JSON value
// the same file would hold in JSON, so that a file read in either form is
// checked by one reader of JSON; and the line of a JSON key path in the YAML,
// for error messages. Startup only; never resolves more than YAML 1.2's core
// schema, so a plain scalar means the same here as in any YAML 1.2 reader.
#pragma once

#include <cstddef>
#include <string_view>

#include <boost/json/value.hpp>

#include "config/strict_yaml.hpp"

namespace tokenspeed::metrics {

// node as JSON. A plain (unquoted) scalar is read by YAML 1.2's core schema:
// null ("", "~", "null"), a boolean ("true", "false"), an integer (decimal,
// "0o" octal, "0x" hexadecimal), a float (".inf", "-.inf" and ".nan"
// included), otherwise a string; a quoted or block scalar is always a string.
// An integer beyond 64 bits is a double, as Boost.JSON reads one. Throws
// StrictYamlError, naming the key path ("a.b[2]") and the line, on a node
// with an explicit tag (which could make "1" a string) and on a number out of
// the range of a double.
boost::json::value yaml_to_json(const YamlNode& node);

// The line of the node at key_path ("views[0].buckets[1]", as the reader of
// the JSON names a key), from root: the line of a mapping key when the path
// ends in one; where the path leaves the tree (a key that is required but
// absent), the line of the deepest node on it; 0 when root has none (an
// empty document).
std::size_t yaml_line_of(const YamlNode& root, std::string_view key_path);

}  // namespace tokenspeed::metrics
