// protobuf_exposition.hpp — renders merged families in the Prometheus
// protobuf exposition (delimited io.prometheus.client.MetricFamily
// messages), the format that carries native histograms, and chooses between
// it and the text format from a scraper's Accept header. Pure formatting:
// reads no store, no file. Tested in test/unit/prometheus/scrape/protobuf_exposition_test.cpp.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "prometheus/scrape/prometheus_merge.hpp"

namespace tokenspeed::metrics {

inline constexpr std::string_view kProtobufExpositionContentType =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
    "encoding=delimited";

enum class ExpositionFormat { text, protobuf };

// The format an Accept header asks for: protobuf when it names the delimited
// MetricFamily media type with a quality above every text or wildcard one
// (Prometheus asks so when native histograms are on); text otherwise.
ExpositionFormat negotiate_exposition(std::string_view accept) noexcept;

// Every family as one length-delimited MetricFamily. Counters are named
// with _total, as in the text. A histogram with exponential buckets carries
// them natively (schema at most 8) and, for scrapers that read only those,
// as classic buckets at their upper boundaries; one whose scale fell below
// -4 (no Prometheus schema) carries the classic buckets alone.
// Threading: pure function, any thread.
std::string render_protobuf_exposition(std::span<const MergedFamily> families);

}  // namespace tokenspeed::metrics
