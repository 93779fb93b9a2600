// exposition_families.hpp — the families of a Prometheus text exposition an
// operator saved from an engine's /metrics (format 0.0.4, as prometheus_client
// and the host write it, or OpenMetrics text), read as definitions for
// `check --engine-metrics`. Reads names, kinds, help, label names and bucket
// bounds, never keeps a value. Startup path only.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "tokenspeed/metrics/metric_definition.hpp"

namespace tokenspeed::metrics {

// The largest exposition read. A busy engine's /metrics (thousands of series,
// each histogram a line per bucket) is a few megabytes; the bound is larger
// than the configuration files' so that such a file is read whole.
inline constexpr std::size_t kExpositionFileLimit = std::size_t{64} << 20;

struct ExpositionFamilies {
  std::string file;  // where they were read
  // The counter, gauge, histogram and summary families, in the order of their
  // TYPE lines, each checked as an engine's definition is (checked_definition:
  // a counter's name without _total). Label names are the union of the
  // family's samples in order of first appearance, without a histogram's
  // "le" or a summary's "quantile"; a histogram's buckets are the distinct
  // finite "le" values, ascending (a text exposition shows every histogram
  // classic).
  std::vector<MetricDefinition> families;
  // One line per family left out or read incompletely, naming the file and
  // the line: an untyped family (no TYPE line, "untyped", OpenMetrics'
  // "unknown"), a kind the host does not record (info, stateset,
  // gaugehistogram), a family without samples (its labels, and a
  // histogram's buckets, are not known).
  std::vector<std::string> notes;
};

// Reads the families of text, the content of file. `_created` series (the
// OpenMetrics samples and the gauge families prometheus_client writes for
// them in format 0.0.4), `# UNIT` lines, other comments, exemplars and
// timestamps are read and ignored; `# EOF` ends the text. A malformed line
// (a sample without a value, a bad name, an unterminated label value, an
// unknown type, a second HELP or TYPE line for one family, a TYPE line after
// the family's samples, text after `# EOF`), or a family its definition's
// checks refuse, throws StartupError naming the file and "line N".
ExpositionFamilies exposition_families_from_text(std::string_view text, const std::string& file);

// Reads the exposition at path (a regular file of at most
// kExpositionFileLimit bytes). A file that cannot be read throws
// StartupError naming path and the key flag (the option that named it).
ExpositionFamilies read_exposition_families(const std::string& path, const std::string& flag);

}  // namespace tokenspeed::metrics
