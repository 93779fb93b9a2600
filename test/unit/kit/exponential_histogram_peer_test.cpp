// exponential_histogram_peer_test.cpp — the kit's exponential histogram
// against the verdicts of OpenTelemetry Go and Prometheus client_golang,
// written out as data in test/data/exponential-histogram/ (its README names
// the sources): bucket indices, recorded and downscaled buckets, and the
// Prometheus form's schema, spans and deltas; and client_golang's boundary
// table against ours.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <tokenspeed/kit/exponential_histogram.hpp>

namespace kit = tokenspeed::metrics::kit;

namespace {

const std::string kDataDir = TSM_SOURCE_ROOT "/test/data/exponential-histogram/";

double parse_value(const std::string& text) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') FAIL("not a number in the data: " << text);
  return value;
}

int64_t parse_integer(const std::string& text) {
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0') FAIL("not an integer in the data: " << text);
  return value;
}

std::vector<std::string> words(std::istringstream& in) {
  std::vector<std::string> out;
  std::string word;
  while (in >> word) out.push_back(word);
  return out;
}

// The lines of a data file without comments and blank lines, with their numbers.
std::vector<std::pair<int, std::string>> data_lines(const std::string& name) {
  std::ifstream file(kDataDir + name);
  REQUIRE(file.good());
  std::vector<std::pair<int, std::string>> lines;
  std::string line;
  for (int number = 1; std::getline(file, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    lines.emplace_back(number, line);
  }
  return lines;
}

std::string spans_text(const std::vector<kit::NativeBucketSpan>& spans) {
  std::string out;
  for (const kit::NativeBucketSpan& s : spans)
    out += (out.empty() ? "" : " ") + std::to_string(s.offset) + ":" + std::to_string(s.length);
  return out;
}

template <class T>
std::string join(const std::vector<T>& values) {
  std::string out;
  for (const T& v : values) out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

std::string join_words(const std::vector<std::string>& w, std::size_t from) {
  std::string out;
  for (std::size_t i = from; i < w.size(); ++i) out += (out.empty() ? "" : " ") + w[i];
  return out;
}

// "OFFSET COUNT..." of an OTLP range, as the data writes it (empty: "").
std::string otlp_text(const kit::OtlpExponentialBuckets& b) {
  if (b.bucket_counts.empty()) return "";
  return std::to_string(b.offset) + " " + join(b.bucket_counts);
}

kit::ExponentialHistogramOptions parse_options(const std::vector<std::string>& w) {
  kit::ExponentialHistogramOptions options;
  for (std::size_t i = 1; i < w.size(); ++i) {
    const std::size_t eq = w[i].find('=');
    REQUIRE(eq != std::string::npos);
    const std::string key = w[i].substr(0, eq);
    const std::string value = w[i].substr(eq + 1);
    if (key == "max_buckets") {
      options.max_buckets = static_cast<uint32_t>(parse_integer(value));
    } else if (key == "max_scale") {
      options.max_scale = static_cast<int32_t>(parse_integer(value));
    } else if (key == "zero_threshold") {
      options.zero_threshold = parse_value(value);
    } else {
      FAIL("unknown option in the data: " << key);
    }
  }
  return options;
}

// Checks one "expect" line against the histogram.
void check_expectation(const kit::ExponentialHistogram& h, const std::vector<std::string>& w) {
  const std::string& what = w.at(1);
  const std::string expected = join_words(w, 2);
  kit::ExponentialPoint otlp;
  h.to_otlp(otlp);
  kit::PrometheusNativeHistogram native;
  const bool native_ok =
      h.to_prometheus(native) == kit::ExponentialHistogram::NativeExported::kExported;
  INFO("expect " << what << " " << expected);
  if (what == "scale") {
    CHECK(h.scale() == parse_integer(w.at(2)));
  } else if (what == "count") {
    CHECK(h.count() == static_cast<uint64_t>(parse_integer(w.at(2))));
    CHECK(otlp.count == h.count());
    CHECK(otlp.count == otlp.zero_count + h.positive().total() + h.negative().total());
  } else if (what == "zero_count") {
    CHECK(otlp.zero_count == static_cast<uint64_t>(parse_integer(w.at(2))));
    REQUIRE(native_ok);
    CHECK(native.zero_count == otlp.zero_count);
  } else if (what == "sum") {
    CHECK(h.sum() == Approx(parse_value(w.at(2))).margin(1e-9));
  } else if (what == "min") {
    CHECK(otlp.min == parse_value(w.at(2)));
  } else if (what == "max") {
    CHECK(otlp.max == parse_value(w.at(2)));
  } else if (what == "positive_otlp") {
    CHECK(otlp_text(otlp.positive) == expected);
  } else if (what == "negative_otlp") {
    CHECK(otlp_text(otlp.negative) == expected);
  } else if (what == "schema") {
    REQUIRE(native_ok);
    CHECK(native.schema == parse_integer(w.at(2)));
  } else if (what == "positive_spans" || what == "negative_spans") {
    REQUIRE(native_ok);
    const kit::NativeBuckets& b = what[0] == 'p' ? native.positive : native.negative;
    CHECK(spans_text(b.spans) == expected);
  } else if (what == "positive_deltas" || what == "negative_deltas") {
    REQUIRE(native_ok);
    const kit::NativeBuckets& b = what[0] == 'p' ? native.positive : native.negative;
    CHECK(join(b.deltas) == expected);
  } else {
    FAIL("unknown expectation in the data: " << what);
  }
}

}  // namespace

TEST_CASE("every value of the peers' mapping tables maps to the index they publish") {
  int checked = 0;
  for (const auto& [number, line] : data_lines("cases.txt")) {
    std::istringstream in(line);
    const std::vector<std::string> w = words(in);
    if (w.at(0) != "map") continue;
    const int32_t scale = static_cast<int32_t>(parse_integer(w.at(1)));
    const double value = parse_value(w.at(2));
    INFO("cases.txt:" << number << ": " << line);
    CHECK(kit::exponential_bucket_index(value, scale) == parse_integer(w.at(3)));
    ++checked;
  }
  CHECK(checked > 100);
}

TEST_CASE("every case of the peers' histogram tests gives the buckets they publish") {
  const auto lines = data_lines("cases.txt");
  int cases = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::istringstream head(lines[i].second);
    const std::vector<std::string> first = words(head);
    if (first.at(0) != "case") continue;
    const std::string name = join_words(first, 1);
    ++cases;
    INFO("case " << name << " (cases.txt:" << lines[i].first << ")");
    std::istringstream options_line(lines.at(i + 1).second);
    const std::vector<std::string> options_words = words(options_line);
    REQUIRE(options_words.at(0) == "options");
    kit::ExponentialHistogram h(parse_options(options_words));
    for (i += 2; lines.at(i).second != "end"; ++i) {
      std::istringstream in(lines[i].second);
      const std::vector<std::string> w = words(in);
      INFO("cases.txt:" << lines[i].first << ": " << lines[i].second);
      if (w[0] == "observe" || w[0] == "observe_mirrored") {
        for (std::size_t k = 1; k < w.size(); ++k) {
          const double value = parse_value(w[k]);
          CHECK(h.observe(value) == kit::ExponentialHistogram::Observed::kAccepted);
          if (w[0] == "observe_mirrored")
            CHECK(h.observe(-value) == kit::ExponentialHistogram::Observed::kAccepted);
        }
      } else if (w[0] == "load") {
        kit::ExponentialPoint point;
        point.scale = static_cast<int32_t>(parse_integer(w.at(1)));
        point.zero_threshold = h.options().zero_threshold;
        point.positive.offset = static_cast<int32_t>(parse_integer(w.at(2)));
        for (std::size_t k = 3; k < w.size(); ++k) {
          point.positive.bucket_counts.push_back(static_cast<uint64_t>(parse_integer(w[k])));
          point.count += point.positive.bucket_counts.back();
        }
        REQUIRE(h.merge(point) == kit::ExponentialHistogram::Merged::kMerged);
      } else if (w[0] == "reduce_scale") {
        h.reduce_scale(static_cast<int32_t>(parse_integer(w.at(1))));
      } else if (w[0] == "expect") {
        check_expectation(h, w);
      } else {
        FAIL("unknown step in the data: " << w[0]);
      }
    }
  }
  CHECK(cases >= 30);
}

TEST_CASE("client_golang's boundary table is ours within 4 ulp, and values clear of it map alike") {
  int schemas = 0;
  for (const auto& [number, line] : data_lines("prometheus_bounds.txt")) {
    std::istringstream in(line);
    const std::vector<std::string> w = words(in);
    const int32_t schema = static_cast<int32_t>(parse_integer(w.at(0)));
    const int64_t n = int64_t{1} << schema;
    INFO("prometheus_bounds.txt:" << number << " schema " << schema);
    REQUIRE(static_cast<int64_t>(w.size()) - 1 == n);
    std::vector<double> theirs;
    for (std::size_t k = 1; k < w.size(); ++k) theirs.push_back(parse_value(w[k]));
    for (int64_t k = 0; k < n; ++k) {
      // Their bound k (in [0.5, 1)) is our lower boundary of index k - n.
      const double ours = kit::exponential_lower_boundary(static_cast<int32_t>(k - n), schema);
      int64_t their_bits;
      int64_t our_bits;
      std::memcpy(&their_bits, &theirs[static_cast<std::size_t>(k)], sizeof their_bits);
      std::memcpy(&our_bits, &ours, sizeof our_bits);
      CHECK(std::llabs(their_bits - our_bits) <= 4);
      // client_golang's key of frac * 2^e is SearchFloat64s(bounds, frac) + (e-1) * n,
      // which is our index + 1.
      for (const int e : {-7, 0, 1, 12}) {
        const double above = std::ldexp(theirs[static_cast<std::size_t>(k)] * (1 + 1e-12), e);
        CHECK(kit::exponential_bucket_index(above, schema) + 1 == (k + 1) + (e - 1) * n);
        if (k > 0) {
          const double below = std::ldexp(theirs[static_cast<std::size_t>(k)] * (1 - 1e-12), e);
          CHECK(kit::exponential_bucket_index(below, schema) + 1 == k + (e - 1) * n);
        }
      }
    }
    ++schemas;
  }
  CHECK(schemas == 8);
}
