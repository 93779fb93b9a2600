/*
 * tokenspeed/kit/exponential_histogram.hpp — a base-2 exponential histogram
 * as OpenTelemetry's data model and Prometheus' native histograms define it
 * (OTel scale == Prometheus schema): bucket i of scale s covers
 * (2^(i/2^s), 2^((i+1)/2^s)], a zero bucket with a threshold, positive and
 * negative bucket ranges bounded per sign that downscale as the OTel SDK does,
 * merge at the lower scale, and the OTLP, Prometheus (spans and deltas) and
 * classic (cumulative le buckets) forms. Header-only C++17. Threading: none
 * inside; the caller owns locking. observe allocates only when a bucket range
 * widens past what it held before (at most max_buckets per sign); never
 * throws, except the constructor on invalid options.
 */
#ifndef TOKENSPEED_KIT_EXPONENTIAL_HISTOGRAM_HPP
#define TOKENSPEED_KIT_EXPONENTIAL_HISTOGRAM_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace tokenspeed::metrics::kit {

// The scales the histogram moves between: OTel's range. Prometheus accepts
// schemas -4 to 8; its form is written at min(scale, 8) (see to_prometheus).
inline constexpr int32_t kExponentialMinScale = -10;
inline constexpr int32_t kExponentialMaxScale = 20;
inline constexpr int32_t kPrometheusMinSchema = -4;
inline constexpr int32_t kPrometheusMaxSchema = 8;

namespace exponential_detail {

inline constexpr uint64_t kFractionMask = (uint64_t{1} << 52) - 1;
inline constexpr int32_t kTableMaxScale = 8;  // scales 1..8 map through tables

// into + add, held at the largest uint64 instead of wrapping: counts of
// weighted observations can pass 2^64, and a count that wrapped to a small
// number would read as a reset.
inline void add_saturated(uint64_t& into, uint64_t add) noexcept {
  into = add > UINT64_MAX - into ? UINT64_MAX : into + add;
}

// A count kept in a double (exact below 2^53) as the uint64 it stands for:
// 2^64 and more saturate, NaN and negatives are 0.
inline uint64_t saturated_count(double count) noexcept {
  if (!(count > 0)) return 0;
  if (count >= 0x1p64) return UINT64_MAX;
  return static_cast<uint64_t>(count);
}

// floor(value / 2^shift) for any sign (>> of a negative is not portable C++17).
inline int64_t floor_shift(int64_t value, int shift) noexcept {
  return value >= 0 ? value >> shift : ~(~value >> shift);
}

// magnitude == (1 + fraction / 2^52) * 2^exponent, for a finite magnitude > 0.
struct Decomposed {
  int32_t exponent = 0;
  uint64_t fraction = 0;
};

inline Decomposed decompose(double magnitude) noexcept {
  uint64_t bits;
  std::memcpy(&bits, &magnitude, sizeof bits);
  const int32_t biased = static_cast<int32_t>(bits >> 52) & 0x7FF;
  if (biased == 0) {
    // Zero is not the histogram's to map (the zero bucket holds it); as a
    // precondition slip it maps below the smallest subnormal.
    if ((bits & kFractionMask) == 0) return Decomposed{-1075, 0};
    // Subnormal: scaled by 2^64 it is normal, and the scaling is exact.
    Decomposed normal = decompose(magnitude * 0x1p64);
    normal.exponent -= 64;
    return normal;
  }
  return Decomposed{biased - 1023, bits & kFractionMask};
}

// 2^(k / 2^scale) as a double, for 0 <= k <= 2^scale: computed in long
// double, so on x86-64 (a 64-bit mantissa) it is the correctly rounded value
// (client_golang's table, built by repeated multiplication, is up to a few
// ulp off it); where long double is double, within an ulp.
inline double octave_boundary(int32_t scale, int64_t k) noexcept {
  const long double exponent =
      static_cast<long double>(k) / static_cast<long double>(int64_t{1} << scale);
  return static_cast<double>(std::exp2l(exponent));
}

// For scales 1..8, the boundaries inside one octave as the fraction bits of
// [1, 2), and for each of 2^(scale+1) equal cells of that octave how many
// boundaries lie below it. The boundaries are at least ln2/2^scale apart, more
// than a cell is wide, so a cell holds at most one: an index is two loads and
// one compare, whatever the scale.
struct OctaveTables {
  uint64_t fraction[kTableMaxScale + 1][(1 << kTableMaxScale) + 1] = {};
  uint16_t below[kTableMaxScale + 1][1 << (kTableMaxScale + 1)] = {};

  OctaveTables() noexcept {
    for (int32_t scale = 1; scale <= kTableMaxScale; ++scale) {
      const int32_t n = 1 << scale;
      for (int32_t k = 1; k < n; ++k) {
        const double boundary = octave_boundary(scale, k);
        uint64_t bits;
        std::memcpy(&bits, &boundary, sizeof bits);
        fraction[scale][k] = bits & kFractionMask;
      }
      fraction[scale][n] = uint64_t{1} << 52;  // sentinel: above every fraction
      const int shift = 52 - (scale + 1);
      int32_t k = 1;
      for (int32_t cell = 0; cell < (n << 1); ++cell) {
        const uint64_t edge = static_cast<uint64_t>(cell) << shift;
        while (k < n && fraction[scale][k] < edge) ++k;
        below[scale][cell] = static_cast<uint16_t>(k - 1);
      }
    }
  }
};

inline const OctaveTables& octave_tables() noexcept {
  static const OctaveTables tables;
  return tables;
}

}  // namespace exponential_detail

/* The bucket index of a finite magnitude > 0 at scale (kExponentialMinScale
 * to kExponentialMaxScale): i with 2^(i/2^scale) < magnitude <= 2^((i+1)/2^scale)
 * (upper-inclusive, as both specifications say). Exact at powers of two at
 * every scale, and exact everywhere for scale <= 8 (against the correctly
 * rounded boundaries); above 8 a logarithm estimate corrected against those
 * boundaries. Subnormals map exactly (not rounded up to the smallest normal,
 * which OTel allows): 2^-1074 is index -1126170625 at scale 20. The largest
 * double is index ((1024 << scale) - 1) for scale >= 0. Zero, negatives,
 * infinities and NaN are the caller's: the histogram counts zero (and what its
 * zero threshold covers) in the zero bucket, files a negative value's
 * magnitude among the negative buckets, and refuses +/-Inf and NaN. Asked
 * anyway, the sign is ignored, zero maps below the smallest subnormal, +Inf
 * to the largest double's bucket (whose upper boundary, 2^1024, is +Inf as a
 * double) and NaN past it. */
inline int32_t exponential_bucket_index(double magnitude, int32_t scale) noexcept {
  using namespace exponential_detail;
  const Decomposed d = decompose(magnitude);
  if (scale <= 0) {
    // Scale 0: (2^e, 2^(e+1)] holds (1 + f) * 2^e for f > 0; 2^e itself is
    // the top of bucket e - 1. Lower scales merge 2^-scale of those.
    const int64_t index0 = d.fraction == 0 ? d.exponent - 1 : d.exponent;
    return static_cast<int32_t>(floor_shift(index0, -scale));
  }
  const int64_t octave = static_cast<int64_t>(d.exponent) * (int64_t{1} << scale);
  if (d.fraction == 0) return static_cast<int32_t>(octave - 1);
  int64_t within;
  if (scale <= kTableMaxScale) {
    const OctaveTables& t = octave_tables();
    const uint64_t cell = d.fraction >> (52 - (scale + 1));
    within = t.below[scale][cell];
    within += d.fraction > t.fraction[scale][within + 1] ? 1 : 0;
  } else {
    // log2 is within an ulp or two, so t is within 2^-28 of the true
    // log2(m) * 2^scale; the rounded boundary is as close. Only a t that
    // close to an integer needs the boundaries to decide.
    const int64_t n = int64_t{1} << scale;
    const double m = 1.0 + std::ldexp(static_cast<double>(d.fraction), -52);
    const double t = std::log2(m) * static_cast<double>(n);
    within = std::clamp<int64_t>(static_cast<int64_t>(t), 0, n - 1);
    const double part = t - static_cast<double>(within);
    if (part < 1e-6 || part > 1 - 1e-6) {
      while (within > 0 && octave_boundary(scale, within) >= m) --within;
      while (within + 1 < n && octave_boundary(scale, within + 1) < m) ++within;
    }
  }
  return static_cast<int32_t>(octave + within);
}

/* The lower boundary of bucket index at scale, 2^(index/2^scale) (exclusive:
 * the bucket's values are above it). May be 0 or +Inf where that lies outside
 * the doubles. */
inline double exponential_lower_boundary(int32_t index, int32_t scale) noexcept {
  using namespace exponential_detail;
  if (scale <= 0) {
    const int64_t exponent = static_cast<int64_t>(index) * (int64_t{1} << -scale);
    return std::ldexp(1.0, static_cast<int>(std::clamp<int64_t>(exponent, -2000, 2000)));
  }
  const int64_t octave = floor_shift(index, scale);
  const int64_t within = index - octave * (int64_t{1} << scale);
  return std::ldexp(octave_boundary(scale, within), static_cast<int>(octave));
}

struct ExponentialHistogramOptions {
  uint32_t max_buckets = 160;                // per sign (OTel's default MaxSize); at least 2
  int32_t max_scale = kExponentialMaxScale;  // the scale of an empty histogram
  double zero_threshold = 0;  // |value| <= it counts in the zero bucket; finite, >= 0
};

/* Why options are invalid, or empty when they are valid. */
inline std::string exponential_options_error(const ExponentialHistogramOptions& o) {
  if (o.max_buckets < 2 || o.max_buckets > (1u << 20))
    return "max_buckets must be between 2 and 1048576, got " + std::to_string(o.max_buckets);
  if (o.max_scale < kExponentialMinScale || o.max_scale > kExponentialMaxScale)
    return "max_scale must be between -10 and 20, got " + std::to_string(o.max_scale);
  if (!std::isfinite(o.zero_threshold) || o.zero_threshold < 0)
    return "zero_threshold must be a finite value >= 0";
  return {};
}

/* One sign's bucket counts: a ring of a power-of-two size holding the
 * contiguous index range [first, last], grown (reallocated) only when that
 * range outgrows it, so the steady state adds to a slot and nothing more.
 * Every slot outside the range is zero. */
class ExponentialBuckets {
 public:
  bool empty() const noexcept { return length_ == 0; }
  int32_t first_index() const noexcept { return first_; }  // meaningful when !empty()
  int32_t last_index() const noexcept {
    return static_cast<int32_t>(static_cast<int64_t>(first_) + length_ - 1);
  }
  uint32_t length() const noexcept { return length_; }  // last - first + 1, or 0

  uint64_t count_at(int32_t index) const noexcept { return contains(index) ? slot(index) : 0; }

  uint64_t total() const noexcept {
    uint64_t sum = 0;
    for (const uint64_t c : ring_) sum += c;
    return sum;
  }

  bool contains(int32_t index) const noexcept {
    return length_ != 0 && index >= first_ &&
           static_cast<int64_t>(index) - first_ < static_cast<int64_t>(length_);
  }

  // Calls visit(index, count) for every index of the range, in order (zeros too).
  template <class Visit>
  void for_each(Visit&& visit) const {
    for (uint32_t i = 0; i < length_; ++i) {
      const int32_t index = static_cast<int32_t>(first_ + static_cast<int64_t>(i));
      visit(index, slot(index));
    }
  }

 private:
  friend class ExponentialHistogram;

  uint64_t& slot(int32_t index) noexcept {
    return ring_[static_cast<uint64_t>(static_cast<int64_t>(index) - base_) & (ring_.size() - 1)];
  }
  const uint64_t& slot(int32_t index) const noexcept {
    return ring_[static_cast<uint64_t>(static_cast<int64_t>(index) - base_) & (ring_.size() - 1)];
  }

  // Room for a range of size indices (the current one kept in place).
  void reserve(uint64_t size) {
    if (size <= ring_.size()) return;
    std::size_t grown_size = std::max<std::size_t>(8, ring_.size() * 2);
    while (grown_size < size) grown_size *= 2;
    std::vector<uint64_t> grown(grown_size, 0);
    for (uint32_t i = 0; i < length_; ++i) {
      const int32_t index = static_cast<int32_t>(first_ + static_cast<int64_t>(i));
      grown[static_cast<uint64_t>(static_cast<int64_t>(index) - first_) & (grown_size - 1)] =
          slot(index);
    }
    ring_.swap(grown);
    base_ = first_;
  }

  // Makes the range [low, high], which contains the current one; the caller
  // has checked high - low < max_buckets. A contiguous range no longer than
  // the ring has a slot per index, whatever the base.
  void widen(int32_t low, int32_t high) {
    reserve(static_cast<uint64_t>(static_cast<int64_t>(high) - low + 1));
    first_ = low;
    length_ = static_cast<uint32_t>(static_cast<int64_t>(high) - low + 1);
  }

  // Moves every count to scale - by: index i becomes floor(i / 2^by).
  void downscale(int by) noexcept {
    if (length_ == 0 || by <= 0) return;
    using exponential_detail::floor_shift;
    // Unroll the ring so that first_ sits at slot 0; then each count moves to a
    // slot at or below its own, in order, and never onto one not yet read.
    const std::size_t start =
        static_cast<uint64_t>(static_cast<int64_t>(first_) - base_) & (ring_.size() - 1);
    std::rotate(ring_.begin(), ring_.begin() + static_cast<std::ptrdiff_t>(start), ring_.end());
    const int64_t new_first = floor_shift(first_, by);
    for (uint32_t i = 0; i < length_; ++i) {
      const uint64_t count = ring_[i];
      ring_[i] = 0;
      exponential_detail::add_saturated(
          ring_[static_cast<std::size_t>(floor_shift(first_ + static_cast<int64_t>(i), by) -
                                         new_first)],
          count);
    }
    const int64_t new_last = floor_shift(static_cast<int64_t>(first_) + length_ - 1, by);
    first_ = static_cast<int32_t>(new_first);
    base_ = first_;
    length_ = static_cast<uint32_t>(new_last - new_first + 1);
  }

  void clear() noexcept {
    std::fill(ring_.begin(), ring_.end(), 0);
    length_ = 0;
  }

  std::vector<uint64_t> ring_;  // size 0 or a power of two
  int64_t base_ = 0;            // the index whose count is at ring_[0]
  int32_t first_ = 0;
  uint32_t length_ = 0;
};

/* The OTLP ExponentialHistogramDataPoint's buckets: bucket_counts[k] is the
 * count of index offset + k. */
struct OtlpExponentialBuckets {
  int32_t offset = 0;
  std::vector<uint64_t> bucket_counts;
};

/* An ExponentialHistogramDataPoint's values (start and time are the caller's).
 * min and max are meaningful when count > 0. */
struct ExponentialPoint {
  int32_t scale = 0;
  uint64_t count = 0;
  double sum = 0;
  uint64_t zero_count = 0;
  double zero_threshold = 0;
  double min = 0;
  double max = 0;
  OtlpExponentialBuckets positive;
  OtlpExponentialBuckets negative;
};

/* The earlier name of ExponentialPoint, kept for plugins built against it. */
using OtlpExponentialPoint [[deprecated("use ExponentialPoint")]] = ExponentialPoint;

/* Prometheus' BucketSpan: offset is the gap from the previous span's end (the
 * first span's: its first index), length the buckets it covers. */
struct NativeBucketSpan {
  int32_t offset = 0;
  uint32_t length = 0;
};

/* One sign of a Prometheus native histogram: spans and, for every bucket the
 * spans cover, its count minus the previous bucket's (the first: minus 0). */
struct NativeBuckets {
  std::vector<NativeBucketSpan> spans;
  std::vector<int64_t> deltas;
};

/* A native histogram as the exposition protobuf (io.prometheus.client.Histogram)
 * and remote-write (prometheus.Histogram) carry it. Prometheus' index is ours
 * plus one: its bucket i has the upper boundary 2^(i/2^schema). */
struct PrometheusNativeHistogram {
  int32_t schema = 0;
  double zero_threshold = 0;
  uint64_t zero_count = 0;
  uint64_t count = 0;
  double sum = 0;
  NativeBuckets positive;
  NativeBuckets negative;
};

class ExponentialHistogram {
 public:
  enum class Observed {
    kAccepted,
    kNoWeight,        // weight 0: nothing to count
    kNotFinite,       // NaN or +/-Inf: no bucket holds it; counted in not_finite_count()
    kScaleUnderflow,  // would need a scale below -10 (max_buckets 2 only); refused_count()
    kOutOfMemory,     // the bucket range could not grow; refused_count()
  };
  enum class Merged {
    kMerged,
    kZeroThresholdDiffers,  // the two zero buckets cover different ranges
    kInvalidPoint,          // a scale outside -10..20, an index range past int32, or a count
                            // that is not the zero count plus the buckets' counts (held
                            // at the largest uint64 when past it)
    kScaleUnderflow,        // the union would need a scale below -10
    kOutOfMemory,
  };
  enum class NativeExported {
    kExported,
    kScaleBelowSchemaMinimum,  // scale < -4: Prometheus has no such schema
  };

  explicit ExponentialHistogram(ExponentialHistogramOptions options = {})
      : options_(checked(options)), scale_(options.max_scale) {}

  /* Counts value weight times. The histogram's count, sum, min and max cover
   * accepted observations only: NaN and +/-Inf go to no bucket (OTel ignores
   * them, so its count stays the buckets' total; Prometheus' client would
   * count NaN in count and sum, and put +/-Inf one bucket past the largest
   * double), and are counted apart for the caller to report. */
  Observed observe(double value, uint64_t weight = 1) noexcept {
    if (weight == 0) return Observed::kNoWeight;
    if (!std::isfinite(value)) {
      exponential_detail::add_saturated(not_finite_count_, weight);
      return Observed::kNotFinite;
    }
    const double magnitude = std::fabs(value);
    if (magnitude <= options_.zero_threshold) {
      exponential_detail::add_saturated(zero_count_, weight);
    } else {
      ExponentialBuckets& buckets = value > 0 ? positive_ : negative_;
      int32_t index = exponential_bucket_index(magnitude, scale_);
      if (!buckets.contains(index)) {
        const Observed room = make_room(buckets, index);
        if (room != Observed::kAccepted) {
          exponential_detail::add_saturated(refused_count_, weight);
          return room;
        }
      }
      exponential_detail::add_saturated(buckets.slot(index), weight);
    }
    exponential_detail::add_saturated(count_, weight);
    sum_ += value * static_cast<double>(weight);
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
    return Observed::kAccepted;
  }

  /* Adds other's counts (its not-finite and refused counts too): at the lower
   * of the two scales, or lower still when the union needs more than
   * max_buckets (this histogram's). Nothing changes unless kMerged. */
  Merged merge(const ExponentialHistogram& other) {
    Source source{other.scale_,      other.options_.zero_threshold,
                  other.zero_count_, other.count_,
                  other.sum_,        other.min_,
                  other.max_};
    source.not_finite_count = other.not_finite_count_;
    source.refused_count = other.refused_count_;
    return merge_from(source, range_of(other.positive_), range_of(other.negative_),
                      [&](bool positive, auto&& add) {
                        (positive ? other.positive_ : other.negative_).for_each(add);
                      });
  }

  /* Adds a data point in OTLP form (another process's state, say). Its count
   * must be its zero count plus its buckets' counts, as OTLP requires. */
  Merged merge(const ExponentialPoint& point) {
    if (point.scale < kExponentialMinScale || point.scale > kExponentialMaxScale ||
        !fits(point.positive) || !fits(point.negative) || !counts_add_up(point))
      return Merged::kInvalidPoint;
    Source source{
        point.scale, point.zero_threshold, point.zero_count, point.count, point.sum, kNoMin,
        kNoMax};
    if (point.count > 0) {  // min and max mean something
      source.min = point.min;
      source.max = point.max;
    }
    return merge_from(
        source, range_of(point.positive), range_of(point.negative), [&](bool positive, auto&& add) {
          const OtlpExponentialBuckets& b = positive ? point.positive : point.negative;
          for (std::size_t k = 0; k < b.bucket_counts.size(); ++k)
            add(static_cast<int32_t>(b.offset + static_cast<int64_t>(k)), b.bucket_counts[k]);
        });
  }

  /* Lowers the scale to at most scale (never raises it): each count moves to
   * the bucket that holds it at the lower scale. */
  void reduce_scale(int32_t scale) noexcept {
    scale = std::max(scale, kExponentialMinScale);
    if (scale >= scale_) return;
    positive_.downscale(scale_ - scale);
    negative_.downscale(scale_ - scale);
    scale_ = scale;
  }

  /* Back to empty at max_scale (a delta window's start); keeps the memory. */
  void clear() noexcept {
    positive_.clear();
    negative_.clear();
    scale_ = options_.max_scale;
    count_ = zero_count_ = not_finite_count_ = refused_count_ = 0;
    sum_ = 0;
    min_ = kNoMin;
    max_ = kNoMax;
  }

  /* The OTLP form, into out (its vectors are reused). Each range runs from its
   * first to its last non-empty bucket, zeros inside kept. */
  void to_otlp(ExponentialPoint& out) const {
    out.scale = scale_;
    out.count = count_;
    out.sum = sum_;
    out.zero_count = zero_count_;
    out.zero_threshold = options_.zero_threshold;
    out.min = count_ > 0 ? min_ : 0;
    out.max = count_ > 0 ? max_ : 0;
    otlp_buckets(positive_, out.positive);
    otlp_buckets(negative_, out.negative);
  }

  /* The Prometheus form, into out (its vectors are reused), at schema
   * min(scale, 8). Runs of up to max_gap empty buckets stay inside a span as
   * zero deltas (client_golang keeps 2); a longer run starts a new span. With
   * no buckets, no zero count and a zero threshold of 0, positive gets one
   * empty span, as client_golang writes it, so that a scrape tells the native
   * histogram from a classic one. */
  NativeExported to_prometheus(PrometheusNativeHistogram& out, uint32_t max_gap = 2) const {
    if (scale_ < kPrometheusMinSchema) return NativeExported::kScaleBelowSchemaMinimum;
    out.schema = std::min(scale_, kPrometheusMaxSchema);
    out.zero_threshold = options_.zero_threshold;
    out.zero_count = zero_count_;
    out.count = count_;
    out.sum = sum_;
    const int shift = scale_ - out.schema;
    native_buckets(positive_, shift, max_gap, out.positive);
    native_buckets(negative_, shift, max_gap, out.negative);
    if (out.positive.spans.empty() && out.negative.spans.empty() && zero_count_ == 0 &&
        options_.zero_threshold == 0)
      out.positive.spans.push_back(NativeBucketSpan{0, 0});
    return NativeExported::kExported;
  }

  int32_t scale() const noexcept { return scale_; }
  uint64_t count() const noexcept { return count_; }  // accepted: zero_count + the buckets'
  double sum() const noexcept { return sum_; }
  double min() const noexcept { return min_; }  // +Inf while count() == 0
  double max() const noexcept { return max_; }  // -Inf while count() == 0
  uint64_t zero_count() const noexcept { return zero_count_; }
  uint64_t not_finite_count() const noexcept { return not_finite_count_; }
  uint64_t refused_count() const noexcept { return refused_count_; }
  const ExponentialBuckets& positive() const noexcept { return positive_; }
  const ExponentialBuckets& negative() const noexcept { return negative_; }
  const ExponentialHistogramOptions& options() const noexcept { return options_; }

 private:
  static constexpr double kNoMin = std::numeric_limits<double>::infinity();
  static constexpr double kNoMax = -std::numeric_limits<double>::infinity();

  struct Range {  // an index range at some scale; empty when !present
    bool present = false;
    int64_t first = 0;
    int64_t last = 0;
  };
  struct Source {
    int32_t scale;
    double zero_threshold;
    uint64_t zero_count;
    uint64_t count;
    double sum;
    double min;
    double max;
    uint64_t not_finite_count = 0;  // an OTLP point has none
    uint64_t refused_count = 0;
  };

  static ExponentialHistogramOptions checked(const ExponentialHistogramOptions& options) {
    const std::string error = exponential_options_error(options);
    if (!error.empty()) throw std::invalid_argument("exponential histogram: " + error);
    return options;
  }

  static Range range_of(const ExponentialBuckets& b) noexcept {
    return b.empty() ? Range{} : Range{true, b.first_index(), b.last_index()};
  }

  // The non-empty part of an OTLP range (leading and trailing zeros dropped).
  static Range range_of(const OtlpExponentialBuckets& b) noexcept {
    const std::vector<uint64_t>& c = b.bucket_counts;
    std::size_t lo = 0;
    std::size_t hi = c.size();
    while (lo < hi && c[lo] == 0) ++lo;
    while (hi > lo && c[hi - 1] == 0) --hi;
    if (lo == hi) return Range{};
    return Range{true, b.offset + static_cast<int64_t>(lo),
                 b.offset + static_cast<int64_t>(hi) - 1};
  }

  static bool counts_add_up(const ExponentialPoint& point) noexcept {
    // Saturated as this histogram counts: a total past 2^64 is the largest.
    uint64_t total = point.zero_count;
    for (const OtlpExponentialBuckets* b : {&point.positive, &point.negative}) {
      for (const uint64_t c : b->bucket_counts) exponential_detail::add_saturated(total, c);
    }
    return total == point.count;
  }

  static bool fits(const OtlpExponentialBuckets& b) noexcept {
    return b.offset + static_cast<int64_t>(b.bucket_counts.size()) - 1 <=
           std::numeric_limits<int32_t>::max();
  }

  // How many scales below the current one a sign's range [low, high] (at the
  // current scale) fits in max_buckets: the OTel SDK's rule.
  int scale_change_for(int64_t low, int64_t high) const noexcept {
    int change = 0;
    while (high - low >= static_cast<int64_t>(options_.max_buckets)) {
      low = exponential_detail::floor_shift(low, 1);
      high = exponential_detail::floor_shift(high, 1);
      ++change;
    }
    return change;
  }

  // index lies outside buckets' range: downscales both signs if the widened
  // range would exceed max_buckets (index follows), then widens.
  Observed make_room(ExponentialBuckets& buckets, int32_t& index) noexcept {
    int64_t low = index;
    int64_t high = index;
    if (!buckets.empty()) {
      low = std::min<int64_t>(low, buckets.first_index());
      high = std::max<int64_t>(high, buckets.last_index());
    }
    const int change = scale_change_for(low, high);
    if (scale_ - change < kExponentialMinScale) return Observed::kScaleUnderflow;
    if (change > 0) {
      reduce_scale(scale_ - change);
      index = static_cast<int32_t>(exponential_detail::floor_shift(index, change));
      low = exponential_detail::floor_shift(low, change);
      high = exponential_detail::floor_shift(high, change);
    }
    try {
      buckets.reserve(static_cast<uint64_t>(high - low + 1));
    } catch (...) {
      return Observed::kOutOfMemory;
    }
    buckets.widen(static_cast<int32_t>(low), static_cast<int32_t>(high));
    return Observed::kAccepted;
  }

  template <class ForEachBucket>
  Merged merge_from(const Source& source, Range positive, Range negative,
                    ForEachBucket&& for_each_bucket) {
    using exponential_detail::floor_shift;
    if (source.zero_threshold != options_.zero_threshold) return Merged::kZeroThresholdDiffers;
    // The scale of the union: the lower of the two, lowered further until
    // each sign's union fits (the scale observing everything would reach).
    int32_t target = std::min(scale_, source.scale);
    int change = 0;
    for (int sign = 0; sign < 2; ++sign) {
      const Range ours = range_of(sign == 0 ? positive_ : negative_);
      const Range theirs = sign == 0 ? positive : negative;
      Range both;
      for (const auto& [range, scale] :
           {std::pair{ours, scale_}, std::pair{theirs, source.scale}}) {
        if (!range.present) continue;
        const int64_t first = floor_shift(range.first, scale - target);
        const int64_t last = floor_shift(range.last, scale - target);
        both = both.present ? Range{true, std::min(both.first, first), std::max(both.last, last)}
                            : Range{true, first, last};
      }
      if (both.present) change = std::max(change, scale_change_for(both.first, both.last));
    }
    target -= change;
    if (target < kExponentialMinScale) return Merged::kScaleUnderflow;
    try {
      // Room first (the only step that can fail: allocation), then change.
      for (int sign = 0; sign < 2; ++sign) {
        const Range ours = range_of(sign == 0 ? positive_ : negative_);
        const Range theirs = sign == 0 ? positive : negative;
        if (!theirs.present) continue;
        int64_t low = floor_shift(theirs.first, source.scale - target);
        int64_t high = floor_shift(theirs.last, source.scale - target);
        if (ours.present) {
          low = std::min(low, floor_shift(ours.first, scale_ - target));
          high = std::max(high, floor_shift(ours.last, scale_ - target));
        }
        // Enough at the current scale too: the ring keeps the unmerged range
        // until reduce_scale below.
        const uint64_t now = ours.present ? static_cast<uint64_t>(ours.last - ours.first + 1) : 0;
        (sign == 0 ? positive_ : negative_)
            .reserve(std::max(now, static_cast<uint64_t>(high - low + 1)));
      }
    } catch (...) {
      return Merged::kOutOfMemory;
    }
    reduce_scale(target);
    for (int sign = 0; sign < 2; ++sign) {
      const Range theirs = sign == 0 ? positive : negative;
      if (!theirs.present) continue;
      ExponentialBuckets& buckets = sign == 0 ? positive_ : negative_;
      const int shift = source.scale - target;
      const int64_t first = floor_shift(theirs.first, shift);
      const int64_t last = floor_shift(theirs.last, shift);
      const int64_t low = buckets.empty() ? first : std::min<int64_t>(first, buckets.first_index());
      const int64_t high = buckets.empty() ? last : std::max<int64_t>(last, buckets.last_index());
      buckets.widen(static_cast<int32_t>(low), static_cast<int32_t>(high));
      for_each_bucket(sign == 0, [&](int32_t index, uint64_t count) {
        if (count != 0)
          exponential_detail::add_saturated(
              buckets.slot(static_cast<int32_t>(floor_shift(index, shift))), count);
      });
    }
    exponential_detail::add_saturated(zero_count_, source.zero_count);
    exponential_detail::add_saturated(not_finite_count_, source.not_finite_count);
    exponential_detail::add_saturated(refused_count_, source.refused_count);
    exponential_detail::add_saturated(count_, source.count);
    sum_ += source.sum;
    min_ = std::min(min_, source.min);
    max_ = std::max(max_, source.max);
    return Merged::kMerged;
  }

  static void otlp_buckets(const ExponentialBuckets& b, OtlpExponentialBuckets& out) {
    out.bucket_counts.clear();
    out.offset = 0;
    if (b.empty()) return;
    out.offset = b.first_index();
    out.bucket_counts.reserve(b.length());
    b.for_each([&](int32_t, uint64_t count) { out.bucket_counts.push_back(count); });
  }

  static void native_buckets(const ExponentialBuckets& b, int shift, uint32_t max_gap,
                             NativeBuckets& out) {
    out.spans.clear();
    out.deltas.clear();
    if (b.empty()) return;
    int64_t next = 0;      // the index after the last one written
    int64_t previous = 0;  // the count of the last bucket written
    auto write = [&](int64_t index, uint64_t count) {
      const int64_t gap = index - next;
      if (out.spans.empty() || gap > static_cast<int64_t>(max_gap)) {
        out.spans.push_back(
            NativeBucketSpan{static_cast<int32_t>(out.spans.empty() ? index : gap), 0});
      } else {
        for (int64_t i = 0; i < gap; ++i) {
          out.deltas.push_back(-previous);
          previous = 0;
          ++out.spans.back().length;
        }
      }
      out.deltas.push_back(static_cast<int64_t>(count) - previous);
      previous = static_cast<int64_t>(count);
      ++out.spans.back().length;
      next = index + 1;
    };
    // Buckets of a higher scale than the schema fold into the schema's bucket
    // (consecutive indices share it); Prometheus' index is ours + 1.
    bool pending = false;
    int64_t pending_index = 0;
    uint64_t pending_count = 0;
    b.for_each([&](int32_t index, uint64_t count) {
      if (count == 0) return;
      const int64_t target = exponential_detail::floor_shift(index, shift) + 1;
      if (pending && target == pending_index) {
        exponential_detail::add_saturated(pending_count, count);
        return;
      }
      if (pending) write(pending_index, pending_count);
      pending = true;
      pending_index = target;
      pending_count = count;
    });
    if (pending) write(pending_index, pending_count);
  }

  ExponentialHistogramOptions options_;
  int32_t scale_;
  ExponentialBuckets positive_;
  ExponentialBuckets negative_;
  uint64_t count_ = 0;
  double sum_ = 0;
  double min_ = kNoMin;
  double max_ = kNoMax;
  uint64_t zero_count_ = 0;
  uint64_t not_finite_count_ = 0;
  uint64_t refused_count_ = 0;
};

/* The histogram as classic cumulative buckets, ascending, for a reader of
 * le buckets (the exposition formats, a remote-write receiver without native
 * histograms): visit(le, cumulative) for each negative bucket (le at its
 * boundary nearest zero), the zero bucket (le at the zero threshold) and
 * each positive bucket (le at its upper boundary). +Inf is not visited: its
 * cumulative count is count(). Exact: every le is a boundary of the buckets
 * the histogram has. Each le is visited once, ascending: a boundary past the
 * doubles (a very low scale) is left to the zero bucket (0) or to +Inf. */
template <class Visit>
void for_each_classic_bucket(const ExponentialHistogram& histogram, Visit&& visit) {
  const int32_t scale = histogram.scale();
  uint64_t cumulative = 0;
  // Boundaries that round to one double (subnormals at a fine scale) are one
  // le, holding the count up to the last of them: every le once, ascending,
  // and cumulative counts that never fall.
  bool pending = false;
  double pending_le = 0;
  uint64_t pending_count = 0;
  const auto boundary = [&](double le) {
    if (pending && le > pending_le) visit(pending_le, pending_count);
    if (!pending || le > pending_le) pending_le = le;
    pending = true;
    pending_count = cumulative;
  };
  const ExponentialBuckets& negative = histogram.negative();
  if (!negative.empty()) {
    for (int32_t i = negative.last_index();; --i) {
      exponential_detail::add_saturated(cumulative, negative.count_at(i));
      const double le = -exponential_lower_boundary(i, scale);
      if (le < 0) boundary(le);
      if (i == negative.first_index()) break;
    }
  }
  exponential_detail::add_saturated(cumulative, histogram.zero_count());
  boundary(histogram.options().zero_threshold);
  const ExponentialBuckets& positive = histogram.positive();
  if (!positive.empty()) {
    for (int32_t i = positive.first_index();; ++i) {
      exponential_detail::add_saturated(cumulative, positive.count_at(i));
      const double le = exponential_lower_boundary(i + 1, scale);
      if (std::isfinite(le)) boundary(le);
      if (i == positive.last_index()) break;
    }
  }
  visit(pending_le, pending_count);
}

}  // namespace tokenspeed::metrics::kit

#endif  // TOKENSPEED_KIT_EXPONENTIAL_HISTOGRAM_HPP
