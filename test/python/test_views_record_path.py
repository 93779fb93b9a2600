"""tokenspeed_metrics.prometheus_client's per-bucket access under a view
that rebuckets a histogram (docs/views.md, "Python"): a child shows the
viewed bounds (_upper_bounds), its _buckets[i] and bucket_counts() read the
viewed buckets, so reads such as SGLang's straggler check see what
prometheus_client with those buckets in the code would; the batched idiom
records n samples of total / n exactly whether the engine picked its bucket
from the child's bounds or from its own list; a bucket that fits neither is
refused, never recorded elsewhere. Under an exponential view the idiom
records exactly too, and the bucket reads are 0.

Each case runs a launcher in a subprocess (start() is process-wide) and
compares with prometheus_client 0.16 run here with the viewed buckets
written into the code."""
import bisect
import json
import math
import os

from prometheus_client import CollectorRegistry
from prometheus_client import Histogram as ReferenceHistogram

from test_native_labels_and_idiom import (SGLANG_IDIOM_SOURCE, reference_samples, run_launcher,
                                          sglang_idiom)

ENGINE_BUCKETS = [0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6]
VIEWED_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1, 2.5, 5]
VALUES = [0.004 * i + (3.0 if i % 50 == 49 else 0.0) for i in range(150)]
BATCHES = [(0.003 * (1 + i % 11) * (1 + i % 5), 1 + i % 5) for i in range(120)]

BODY = """
ENGINE_BUCKETS, VALUES, BATCHES = %r, %r, %r
%sdef own_list_idiom(his, interval, tokens):
    # An engine that finds the bucket in its own list, not the child's.
    import bisect
    his._sum.inc(interval)
    his._buckets[bisect.bisect_left(ENGINE_BUCKETS, interval / tokens)].inc(tokens)
ttft = pc.Histogram("e:ttft_seconds", "TTFT.", ["model_name"], buckets=ENGINE_BUCKETS)
itl = pc.Histogram("e:itl_seconds", "ITL.", ["model_name"], buckets=ENGINE_BUCKETS)
own = pc.Histogram("e:own_seconds", "ITL by the engine's list.", buckets=ENGINE_BUCKETS)
child = ttft.labels(model_name="m")
for value in VALUES:
    child.observe(value)
for interval, tokens in BATCHES:
    sglang_idiom(itl.labels(model_name="m"), interval, tokens)
    own_list_idiom(own, interval, tokens)
wrong = itl.labels(model_name="m")
wrong._sum.inc(0.5)
refusal = refused(lambda: wrong._buckets[0].inc(1))
print(json.dumps({
    "bounds": child._upper_bounds, "family_bounds": own._upper_bounds,
    "reads": [b.get() for b in child._buckets], "values": [b._value for b in child._buckets],
    "counts": list(child.bucket_counts()),
    "ttft": histogram_samples("e:ttft_seconds"), "itl": histogram_samples("e:itl_seconds"),
    "own": histogram_samples("e:own_seconds"), "own_sum": own._sum.get(),
    "refusal": refusal}))
""" % (ENGINE_BUCKETS, VALUES, BATCHES, SGLANG_IDIOM_SOURCE)


def views_flags(workdir):
    path = os.path.join(workdir, "views.json")
    with open(path, "w") as out:
        json.dump({"views": [{"select": {"name": "e:*", "kind": "histogram"},
                              "buckets": VIEWED_BUCKETS}]}, out)
    return ["--metrics-views", path]


def reference():
    """prometheus_client with the viewed buckets in the code."""
    registry = CollectorRegistry()
    ttft = ReferenceHistogram("e:ttft_seconds", "TTFT.", ["model_name"], buckets=VIEWED_BUCKETS,
                              registry=registry)
    itl = ReferenceHistogram("e:itl_seconds", "ITL.", ["model_name"], buckets=VIEWED_BUCKETS,
                             registry=registry)
    own = ReferenceHistogram("e:own_seconds", "ITL.", buckets=VIEWED_BUCKETS, registry=registry)
    for value in VALUES:
        ttft.labels(model_name="m").observe(value)
    for interval, tokens in BATCHES:
        sglang_idiom(itl.labels(model_name="m"), interval, tokens)
        sglang_idiom(own, interval, tokens)
    return ttft.labels(model_name="m"), reference_samples(ttft), reference_samples(itl), own


def assert_same(got, want):
    assert [row[:2] for row in got] == [row[:2] for row in want]
    for (name, _, value), (_, _, expected) in zip(got, want):
        assert value == expected, (name, value, expected)


def test_a_rebucketed_childs_bounds_and_bucket_reads_are_the_viewed_ones(workdir):
    [ours] = run_launcher(workdir, BODY, views_flags(workdir))
    child, want_ttft, _, _ = reference()
    viewed = VIEWED_BUCKETS + [math.inf]
    assert ours["bounds"] == [float(b) for b in viewed]
    assert ours["family_bounds"] == [float(b) for b in viewed]
    per_bucket = [b.get() for b in child._buckets]
    assert ours["reads"] == per_bucket
    assert ours["values"] == per_bucket
    assert ours["counts"] == per_bucket
    assert sum(ours["values"]) == len(VALUES)  # SGLang's straggler check's total
    assert_same(ours["ttft"], want_ttft)


def test_the_idiom_records_exactly_from_the_childs_bounds_or_the_engines_own_list(workdir):
    [ours] = run_launcher(workdir, BODY, views_flags(workdir))
    _, _, want_itl, own = reference()
    assert_same(ours["itl"], want_itl)
    want_own = reference_samples(own)
    assert [row[:2] for row in ours["own"]] == [row[:2] for row in want_own]
    for (name, _, value), (_, _, expected) in zip(ours["own"], want_own):
        assert value == expected, (name, value, expected)
    assert ours["own_sum"] == own._sum.get()
    # The engine's own list really gave other indices than the viewed bounds.
    assert any(bisect.bisect_left(ENGINE_BUCKETS, i / n) != bisect.bisect_left(VIEWED_BUCKETS, i / n)
               for i, n in BATCHES)


def test_a_bucket_that_fits_neither_bounds_is_refused_and_records_nothing(workdir):
    [ours] = run_launcher(workdir, BODY, views_flags(workdir))
    _, _, want_itl, _ = reference()
    assert ours["refusal"].startswith("ValueError: histogram _buckets[0].inc(1) after "
                                      "_sum.inc(0.5)"), ours["refusal"]
    assert "observe(value, weight)" in ours["refusal"]
    assert_same(ours["itl"], want_itl)


def test_under_an_exponential_view_the_idiom_records_exactly_and_bucket_reads_are_zero(workdir):
    path = os.path.join(workdir, "views.json")
    with open(path, "w") as out:
        json.dump({"views": [{"select": {"name": "e:*"}, "exponential": {}}]}, out)
    [ours] = run_launcher(workdir, """
BATCHES = %r
%schild = pc.Histogram("e:itl_seconds", "ITL.", ["model_name"], buckets=%r).labels(
    model_name="m")
for interval, tokens in BATCHES:
    sglang_idiom(child, interval, tokens)
samples = histogram_samples("e:itl_seconds")
print(json.dumps({"counts": list(child.bucket_counts()), "sum": child._sum.get(),
                  "reads": [b.get() for b in child._buckets],
                  "count": [s[2] for s in samples if s[0] == "e:itl_seconds_count"],
                  "exposed_sum": [s[2] for s in samples if s[0] == "e:itl_seconds_sum"]}))
""" % (BATCHES, SGLANG_IDIOM_SOURCE, ENGINE_BUCKETS), ["--metrics-views", path])
    _, _, _, own = reference()
    assert ours["count"] == [sum(n for _, n in BATCHES)]
    assert ours["sum"] == own._sum.get()
    assert ours["exposed_sum"] == [own._sum.get()]
    assert set(ours["counts"]) == {0.0} and set(ours["reads"]) == {0.0}


def test_views_that_give_two_gauges_one_name_never_fail_the_engines_calls(workdir):
    """The later family keeps its engine name; the registry shows each family
    under the name the host gives it, the renamed one under its new name."""
    path = os.path.join(workdir, "views.json")
    with open(path, "w") as out:
        json.dump({"views": [{"select": {"name": "e:running"}, "name": "llm:requests"},
                             {"select": {"name": "e:waiting"}, "name": "llm:requests"}]}, out)
    [ours] = run_launcher(workdir, """
running = pc.Gauge("e:running", "Running.", ["model_name"])
waiting = pc.Gauge("e:waiting", "Waiting.", ["model_name"])
calls = [refused(lambda: running.labels(model_name="m").set(3)),
         refused(lambda: waiting.labels(model_name="m").set(5)),
         refused(lambda: waiting.labels(model_name="m").inc(1))]
values = {m.name: [s.value for s in m.samples] for m in pc.REGISTRY.collect()
          if m.name in ("llm:requests", "e:running", "e:waiting")}
print(json.dumps({"calls": calls, "values": values}))
""", ["--metrics-views", path])
    assert ours["calls"] == ["accepted"] * 3
    # The first defined takes the views' name; the later keeps its own.
    assert ours["values"] == {"llm:requests": [3.0], "e:waiting": [6.0]}
