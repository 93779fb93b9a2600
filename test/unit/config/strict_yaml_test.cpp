// strict_yaml_test.cpp — unit tests of host/config/strict_yaml: the tree of a
// YAML document and the rules a configuration file must keep.
#include <catch2/catch.hpp>

#include <string>

#include "config/strict_yaml.hpp"

using namespace tokenspeed::metrics;

namespace {

std::string error_of(const std::string& text, std::string* key_path = nullptr) {
  try {
    parse_strict_yaml(text);
  } catch (const StrictYamlError& error) {
    if (key_path != nullptr) *key_path = error.key_path();
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("a document becomes mappings, sequences and scalars in the file's order, with lines") {
  const YamlNode root = parse_strict_yaml(
      "# comment\n"
      "b: 1\n"
      "a:\n"
      "  - x\n"
      "  - 'y'\n"
      "c: ~\n"
      "d: \"null\"\n");
  REQUIRE(root.kind == YamlNode::Kind::mapping);
  REQUIRE(root.entries.size() == 4);
  CHECK(root.entries[0].key == "b");
  CHECK(root.entries[0].value.value == "1");
  CHECK(root.entries[0].value.line == 2);
  CHECK_FALSE(root.entries[0].value.quoted);
  const YamlNode& list = root.entries[1].value;
  REQUIRE(list.kind == YamlNode::Kind::sequence);
  REQUIRE(list.items.size() == 2);
  CHECK(list.items[1].value == "y");
  CHECK(list.items[1].quoted);
  CHECK(list.items[1].line == 5);
  CHECK(root.entries[2].value.kind == YamlNode::Kind::null);
  CHECK(root.entries[3].value.kind == YamlNode::Kind::scalar);
}

TEST_CASE("a node's explicit tag is kept for its reader to judge, resolved by libyaml") {
  const YamlNode root = parse_strict_yaml("a: !!str 1\nb: !local [x]\nc: 'y'\n");
  CHECK(root.tag.empty());
  CHECK(root.entries[0].value.tag == "tag:yaml.org,2002:str");
  CHECK(root.entries[1].value.tag == "!local");
  CHECK(root.entries[2].value.tag.empty());
}

TEST_CASE("an empty document or one of comments only is null") {
  CHECK(parse_strict_yaml("").kind == YamlNode::Kind::null);
  CHECK(parse_strict_yaml("# nothing\n").kind == YamlNode::Kind::null);
}

TEST_CASE("a key given twice is refused with its path") {
  std::string path;
  CHECK_THAT(error_of("a:\n  b: 1\n  b: 2\n", &path), Catch::Contains("duplicate key 'b'"));
  CHECK(path == "a.b");
}

TEST_CASE("aliases are refused, so no alias expansion can blow up") {
  std::string path;
  CHECK_THAT(error_of("a: &x [1, 2]\nb: *x\n", &path), Catch::Contains("aliases"));
  CHECK(path == "b");
}

TEST_CASE("syntax errors name line and column") {
  CHECK_THAT(error_of("a: [1, 2\n"),
             Catch::StartsWith("not valid YAML") && Catch::Contains("line"));
  CHECK_THAT(error_of("a: b: c\n"), Catch::Contains("line 1"));
}

TEST_CASE("a mapping key that is not a scalar is refused") {
  CHECK_THAT(error_of("? [a]\n: 1\n"), Catch::Contains("mapping key"));
}

TEST_CASE("more than one document is refused") {
  CHECK_THAT(error_of("a: 1\n---\nb: 2\n"), Catch::Contains("more than one YAML document"));
}

TEST_CASE("nesting past the bound is refused, not recursed into") {
  std::string deep(kYamlDepthLimit + 1, '[');
  deep += std::string(kYamlDepthLimit + 1, ']');
  CHECK_THAT(error_of(deep), Catch::Contains("nested deeper than"));
  std::string fine(kYamlDepthLimit, '[');
  fine += std::string(kYamlDepthLimit, ']');
  CHECK(parse_strict_yaml(fine).kind == YamlNode::Kind::sequence);
}

TEST_CASE(
    "duplicate keys are found in linear time: key comparisons grow with the keys, not their "
    "square") {
  // Keys that share a long prefix, as generated user names do.
  auto mapping_of = [](int keys) {
    std::string text;
    for (int i = 0; i < keys; ++i) text += "user-with-a-long-prefix-" + std::to_string(i) + ": x\n";
    return text;
  };
  for (const int keys : {1'000, 20'000}) {
    INFO(keys << " keys");
    YamlParseFigures counts;
    const YamlNode root = parse_strict_yaml(mapping_of(keys), &counts);
    REQUIRE(root.entries.size() == static_cast<std::size_t>(keys));
    // A quadratic search compares each key with every earlier one: about
    // keys * keys / 2 comparisons (200 million at 20,000 keys).
    CHECK(counts.key_comparisons <= static_cast<std::size_t>(keys));
  }
  // And the duplicate is still found, at the end of a large mapping.
  std::string key_path;
  CHECK_THAT(error_of(mapping_of(20'000) + "user-with-a-long-prefix-7: y\n", &key_path),
             Catch::Contains("duplicate key 'user-with-a-long-prefix-7'"));
  CHECK(key_path == "user-with-a-long-prefix-7");
}

TEST_CASE("key paths cost the file's size, not a long key's length times the nodes under it") {
  // One key of 1,000 bytes (YAML's longest plain key is 1,024) above 20,000
  // items, each a mapping of two keys: a path copied into every node would
  // write 6 * 10^7 bytes for a file of 3.4 * 10^5.
  const std::string key(1'000, 'k');
  std::string text = key + ":\n";
  for (int i = 0; i < 20'000; ++i) text += "  - {a: 1, b: 2}\n";
  YamlParseFigures counts;
  const YamlNode root = parse_strict_yaml(text, &counts);
  REQUIRE(root.entries.at(0).value.items.size() == 20'000);
  CHECK(counts.path_bytes <= text.size());
  // The path is still named where the file is at fault, cut as every
  // excerpt of input is.
  std::string key_path;
  CHECK_THAT(error_of(text + "  - {a: 1, a: 2}\n", &key_path),
             Catch::Contains("duplicate key 'a'"));
  CHECK(key_path.starts_with("kkkk"));
  CHECK(key_path.ends_with("... (1009 bytes)"));  // the key, "[20000]" and ".a"
}
