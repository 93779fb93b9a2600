"""exponential_buckets.py — base-2 exponential buckets as the tests compare
them: bucket i of scale s holds (2^(i/2^s), 2^((i+1)/2^s)] (OpenTelemetry's
ExponentialHistogram, Prometheus' native histogram). Reads an OTLP data
point (as the test receiver keeps it) and the classic `le` lines /metrics
writes for an exponential histogram, merges histograms at the lower scale and
lowers a histogram's scale, all in exact integer arithmetic on the indices.

A histogram here is a dict: scale, zero_count, positive and negative
({index: count}, no zero counts).
"""
import math

# Relative distance within which a bound read from /metrics is the boundary
# computed here: far below the spacing of neighbouring boundaries even at
# scale 20 (2^(2^-20) - 1, about 6.6e-7), far above a double's rounding.
BOUNDARY_TOLERANCE = 1e-9


def from_otlp(point):
    """The histogram of one ExponentialHistogramDataPoint (the receiver's
    form: scale, zero_count, positive and negative {offset, bucket_counts})."""
    histogram = {"scale": point["scale"], "zero_count": point["zero_count"]}
    for sign in ("positive", "negative"):
        buckets = point[sign]
        histogram[sign] = {buckets["offset"] + k: count
                           for k, count in enumerate(buckets["bucket_counts"]) if count}
    return histogram


def at_scale(histogram, scale):
    """histogram at scale (not above its own): bucket i becomes
    floor(i / 2^(its scale - scale)), which holds it."""
    shift = histogram["scale"] - scale
    if shift < 0:
        raise ValueError(f"cannot raise scale {histogram['scale']} to {scale}")
    out = {"scale": scale, "zero_count": histogram["zero_count"]}
    for sign in ("positive", "negative"):
        merged = {}
        for index, count in histogram[sign].items():
            merged[index >> shift] = merged.get(index >> shift, 0) + count
        out[sign] = merged
    return out


def merge(histograms):
    """The sum of histograms (of one zero threshold) at the lowest of their
    scales: what observing everything into one histogram of that scale
    gives."""
    histograms = list(histograms)
    scale = min(h["scale"] for h in histograms)
    out = {"scale": scale, "zero_count": 0, "positive": {}, "negative": {}}
    for histogram in histograms:
        lowered = at_scale(histogram, scale)
        out["zero_count"] += lowered["zero_count"]
        for sign in ("positive", "negative"):
            for index, count in lowered[sign].items():
                out[sign][index] = out[sign].get(index, 0) + count
    return out


def total(histogram):
    """The zero count plus every bucket's: an OTLP point's count."""
    return (histogram["zero_count"] + sum(histogram["positive"].values()) +
            sum(histogram["negative"].values()))


def index_of_boundary(bound, scale):
    """i with 2^(i/2^scale) == bound (within BOUNDARY_TOLERANCE), or None."""
    index = round(math.log2(bound) * 2.0 ** scale)
    if abs(2.0 ** (index / 2.0 ** scale) / bound - 1) > BOUNDARY_TOLERANCE:
        return None
    return index


def scale_of_neighbours(smaller, larger):
    """The scale at which two neighbouring boundaries (magnitudes) are one
    bucket apart."""
    return round(-math.log2(math.log2(larger) - math.log2(smaller)))


def from_classic_lines(lines, zero_threshold, scale_if_unknown):
    """The histogram whose classic lines /metrics wrote: lines is
    [(le, cumulative count)] of one series ascending by le, +Inf last: the
    negative buckets at minus their lower boundary, the zero bucket at the
    zero threshold, the positive ones at their upper boundary. The scale is
    the one at which neighbouring lines are one bucket apart; with at most one
    bucket per sign the lines do not tell it, and scale_if_unknown is
    taken. Returns (histogram, total count)."""
    negative = [(le, c) for le, c in lines if le < 0]
    zero = [(le, c) for le, c in lines if le == zero_threshold]
    positive = [(le, c) for le, c in lines if zero_threshold < le < math.inf]
    infinite = [c for le, c in lines if le == math.inf]
    if len(zero) != 1 or len(infinite) != 1 or len(negative) + len(positive) + 2 != len(lines):
        raise AssertionError(f"not the lines of an exponential histogram: {lines}")
    scale = scale_if_unknown
    if len(positive) >= 2:
        scale = scale_of_neighbours(positive[0][0], positive[1][0])
    elif len(negative) >= 2:
        scale = scale_of_neighbours(-negative[-1][0], -negative[-2][0])
    histogram = {"scale": scale, "positive": {}, "negative": {}}
    below = 0
    # Negative bucket i is at le -2^(i/2^s): ascending le, descending i.
    for le, cumulative in negative:
        index = index_of_boundary(-le, scale)
        if index is None:
            raise AssertionError(f"le {le} is no boundary of scale {scale}")
        if cumulative != below:
            histogram["negative"][index] = int(cumulative - below)
        below = cumulative
    histogram["zero_count"] = int(zero[0][1] - below)
    below = zero[0][1]
    for le, cumulative in positive:
        index = index_of_boundary(le, scale)
        if index is None:
            raise AssertionError(f"le {le} is no boundary of scale {scale}")
        if cumulative != below:
            histogram["positive"][index - 1] = int(cumulative - below)
        below = cumulative
    if infinite[0] != below:
        raise AssertionError(f"+Inf holds {infinite[0]}, the buckets {below}: {lines}")
    return histogram, int(infinite[0])
