"""otel_views_oracle.py — OpenTelemetry's JavaScript SDK is the oracle of
the views (docs/views.md): one recording script is played through the SDK's
Views (test/otel_views_oracle/oracle.js, @opentelemetry/sdk-metrics 2.12.1,
one collection by a cumulative reader) and through the host
(otel-views-driver: one process, the otlp output, the same views file) into
the OTLP receiver (test/otlp_receiver, the official decoders), and the two
sets of points are equal: every metric name, attribute set, Sum value and
Histogram count, sum, bounds and bucket counts. keep_labels and drop_labels
re-aggregate as the SDK's allow-list and deny-list attributes processors do
(counters and histograms summed); random scripts (seeded: TSM_ORACLE_SEED
replays one) hold zeros, large values, values on bucket bounds and many
label values.

cardinality_limit is the SDK's aggregationCardinalityLimit, whose semantics
in @opentelemetry/sdk-metrics 2.12.1 (build/src/state/DeltaMetricProcessor.js)
are:
- a limit N admits N - 1 attribute sets; the overflow set is the Nth series
  (line 29: `this._cardinalityLimit = (aggregationCardinalityLimit ?? 2000) - 1`,
  and line 36 sends a new set to the overflow once the storage holds that many);
  a limit of 1 sends every set to the overflow series;
- the overflow series' only attribute is `otel.metric.overflow`, the boolean
  true (line 24: `_overflowAttributes = { 'otel.metric.overflow': true }`);
- a set admitted before the overflow began is still recorded into its own
  series (line 33: the set found in the storage is recorded, the limit is
  looked at only for a set not found); the limit counts the sets after the
  View's attributes processors (SyncMetricStorage.js line 33);
- for synchronous instruments the count is of the sets recorded since the
  last collection (line 36 looks at _activeCollectionStorage, which collect()
  empties, line 88), so with cumulative temporality the cumulative stream
  gains N - 1 more sets after each collection (TemporalMetricProcessor.js
  merges them). The host caps a family for the life of its process; the
  oracle collects once, after every recording, where the two agree. The
  host counts a set at labels(), the SDK when it records: the driver
  records at every labels() call.

Environment (set by test/integration/meson.build): TSM_OTLP_DIR,
TSM_OTLP_RECEIVER, TSM_NODE, TSM_TEST_TMPDIR as for the otlp tests;
TSM_VIEWS_ORACLE (test/otel_views_oracle/oracle.js, its node_modules beside
it) and TSM_VIEWS_DRIVER (the otel-views-driver executable).
"""
import json
import os
import random
import subprocess
import sys
import unittest

import otlp_common as oc

ORACLE_JS = os.environ["TSM_VIEWS_ORACLE"]
DRIVER = os.environ["TSM_VIEWS_DRIVER"]
SEEDS = [int(os.environ["TSM_ORACLE_SEED"])] if os.environ.get("TSM_ORACLE_SEED") else [
    1, 2, 3, 4, 5, 6]
RUN_TIMEOUT_S = 120  # a hang guard only


def skip_unless_oracle_installed():
    """Exits 77 (meson: skipped) when the oracle's npm packages are missing."""
    modules = os.path.join(os.path.dirname(ORACLE_JS), "node_modules", "@opentelemetry",
                           "sdk-metrics")
    if not os.path.isdir(modules):
        print(f"skipped: {modules} is missing (run npm ci in {os.path.dirname(ORACLE_JS)})")
        sys.exit(77)


def normalized(name, kind, attributes, point):
    """One point as both sides print it: a key (name, sorted attributes as
    strings) and its values."""
    attributes = {key: str(value).lower() if isinstance(value, bool) else str(value)
                  for key, value in attributes.items()}
    key = (name, json.dumps(attributes, sort_keys=True))
    if kind == "sum":
        return key, {"type": "sum", "value": point["value"]}
    return key, {"type": "histogram", "count": point["count"], "sum": point["sum"],
                 "explicit_bounds": list(point["explicit_bounds"]),
                 "bucket_counts": list(point["bucket_counts"])}


def oracle_points(script_path, views_path):
    done = subprocess.run([oc.NODE, ORACLE_JS, script_path, views_path], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise AssertionError(f"oracle.js exit status {done.returncode}: {done.stderr}")
    out = {}
    for point in json.loads(done.stdout)["points"]:
        key, values = normalized(point["name"], point["type"], point["attributes"], point)
        out[key] = values
    return out


def host_points(state):
    out = {}
    for point in state["series"]:
        if point["type"] not in ("sum", "histogram"):
            raise AssertionError(f"unexpected point {point}")
        key, values = normalized(point["name"], point["type"], point["attributes"], point)
        if key in out:
            raise AssertionError(f"two points of {key}: {out[key]}, {values}")
        out[key] = values
    return out


class ViewsAgreeWithOpenTelemetry(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = oc.make_tmp()
        self.receiver = oc.Receiver()

    def tearDown(self):
        self.receiver.stop()

    def write(self, name, content):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as file:
            json.dump(content, file)
        return path

    def play(self, script, views):
        """The points of the host and of the oracle, for one script and views."""
        script_path = self.write("script.json", script)
        views_path = self.write("views.json", {"views": views})
        config = self.write("otlp.json", {"otlp": {
            "endpoint": self.receiver.url + "/v1/metrics", "export_interval_ms": 3600000}})
        done = subprocess.run([DRIVER, script_path, views_path, config, oc.OTLP_DIR],
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        self.assertEqual(done.returncode, 0, f"otel-views-driver:\n{done.stdout}{done.stderr}")
        return host_points(self.receiver.state()), oracle_points(script_path, views_path)

    def assert_agree(self, script, views, describe=""):
        host, oracle = self.play(script, views)
        self.assertTrue(oracle, f"the oracle collected no point {describe}")
        self.assertEqual(sorted(host), sorted(oracle), f"point sets differ {describe}")
        for key in sorted(oracle):
            self.assertEqual(host[key], oracle[key], f"{key} {describe}")
        return host

    # --- the cases named in docs/views.md

    def test_keep_labels_on_a_counter_and_a_histogram_sums_as_the_sdk_does(self):
        script = {"families": [
            counter("oracle_tokens", ["model", "route", "request_id"]),
            histogram("oracle_latency_seconds", ["model", "route", "request_id"], [0.1, 1, 10]),
        ], "recordings": [
            rec("oracle_tokens", ["llama", "/chat", "r1"], 3),
            rec("oracle_tokens", ["llama", "/chat", "r2"], 4),
            rec("oracle_tokens", ["llama", "/embed", "r3"], 5),
            rec("oracle_tokens", ["qwen", "/chat", "r4"], 0),
            rec("oracle_latency_seconds", ["llama", "/chat", "r1"], 0.05),
            rec("oracle_latency_seconds", ["llama", "/embed", "r2"], 1),
            rec("oracle_latency_seconds", ["qwen", "/chat", "r3"], 20),
            rec("oracle_latency_seconds", ["llama", "/chat", "r4"], 0),
        ]}
        views = [{"select": {"name": "oracle_tokens"}, "keep_labels": ["model"]},
                 {"select": {"name": "oracle_latency_seconds", "kind": "histogram"},
                  "keep_labels": ["model", "route"]}]
        host = self.assert_agree(script, views)
        self.assertEqual(host[("oracle_tokens", '{"model": "llama"}')]["value"], 12)
        self.assertEqual(len(host), 2 + 3, host)

    def test_drop_labels_sums_several_label_sets_as_the_sdk_does(self):
        script = {"families": [
            counter("oracle_requests", ["model", "request_id"]),
            histogram("oracle_ttft_seconds", ["model", "request_id"], [0.01, 0.1, 1]),
        ], "recordings": [
            rec(family, ["llama", f"r{i}"], value)
            for i in range(20)
            for family, value in (("oracle_requests", i), ("oracle_ttft_seconds", i / 40))
        ]}
        views = [{"select": {"name": "oracle_*"}, "drop_labels": ["request_id", "absent"]}]
        host = self.assert_agree(script, views)
        self.assertEqual(host[("oracle_requests", '{"model": "llama"}')]["value"], 190)
        self.assertEqual(host[("oracle_ttft_seconds", '{"model": "llama"}')]["count"], 20)

    def test_rebucketed_renamed_and_dropped_families_agree(self):
        script = {"families": [
            histogram("oracle_itl_seconds", ["model"], [1, 2]),
            counter("oracle_renamed", ["model"]),
            counter("oracle_dropped", ["model"]),
        ], "recordings": [rec("oracle_itl_seconds", ["llama"], v) for v in (0, 0.5, 1, 1.5, 3, 1e9)]
            + [rec("oracle_renamed", ["llama"], 2), rec("oracle_dropped", ["llama"], 1)]}
        views = [{"select": {"name": "oracle_itl_seconds"}, "buckets": [0.5, 1, 1.25, 100]},
                 {"select": {"name": "oracle_renamed"}, "name": "oracle_new_name"},
                 {"select": {"name": "oracle_dropped"}, "drop": True}]
        host = self.assert_agree(script, views)
        self.assertEqual({key[0] for key in host}, {"oracle_itl_seconds", "oracle_new_name"})

    # --- a rule: random scripts and views

    def test_random_scripts_agree_with_the_sdk(self):
        for seed in SEEDS:
            with self.subTest(seed=seed):
                self.restart_receiver()
                script, views = random_case(random.Random(seed))
                self.assert_agree(script, views, f"(seed {seed}; TSM_ORACLE_SEED={seed} replays it)")

    def restart_receiver(self):
        """A receiver with no point kept: each run's points alone."""
        self.receiver.stop()
        self.receiver = oc.Receiver()

    # --- cardinality_limit

    def test_cardinality_limit_overflows_as_the_sdk_does(self):
        for limit in (1, 2, 3, 7):
            with self.subTest(limit=limit):
                self.restart_receiver()
                script, views = overflow_case(limit)
                host = self.assert_agree(script, views, f"(cardinality_limit {limit})")
                overflow = [key for key in host if "otel.metric.overflow" in key[1]]
                self.assertEqual(len(overflow), 2, host)  # the counter's and the histogram's
                self.assertEqual(len(host), 2 * limit, host)

    def test_random_scripts_with_a_cardinality_limit_agree_with_the_sdk(self):
        overflowed = 0
        for seed in SEEDS:
            with self.subTest(seed=seed):
                self.restart_receiver()
                rng = random.Random(1000 + seed)
                script, views = random_case(rng)
                for view in views:
                    view["cardinality_limit"] = rng.choice([1, 2, 5, 20, 400])
                host = self.assert_agree(script, views, f"(seed {1000 + seed})")
                overflowed += sum("otel.metric.overflow" in key[1] for key in host)
        if len(SEEDS) > 1:
            self.assertGreater(overflowed, 0, "no random script reached its limit")


def counter(name, labels):
    return {"name": name, "kind": "counter", "labels": labels, "buckets": []}


def histogram(name, labels, buckets):
    return {"name": name, "kind": "histogram", "labels": labels, "buckets": buckets}


def rec(family, labels, value):
    """A recording; its value as the shortest decimal that reads back as
    that double (the script's numbers are strings: see oracle.js)."""
    return {"family": family, "labels": labels, "value": repr(float(value))}


def overflow_case(limit):
    """A counter and a histogram capped at limit, a request label dropped
    first: sets arrive, overflow, and the first set is recorded again after
    the overflow began."""
    families = [counter("oracle_capped", ["model", "request_id"]),
                histogram("oracle_capped_seconds", ["model", "request_id"], [0.5, 5])]
    recordings = []
    for i in range(limit + 3):
        for family in families:
            recordings.append(rec(family["name"], [f"m{i}", f"r{i}"], i + 0.5))
    for family in families:
        recordings.append(rec(family["name"], ["m0", "r-late"], 100))
    views = [{"select": {"name": "oracle_capped*"}, "drop_labels": ["request_id"],
              "cardinality_limit": limit}]
    return {"families": families, "recordings": recordings}, views


VALUE_EDGES = [0, 0, 1, 0.5, 2 ** 40, 1e12, 123456789.125, 1e-9]
# Bounds of the views' buckets, some with a long decimal form.
VIEW_BOUNDS = [0.25, 0.3, 1, 2, 8, 50, 100, 996.8988906033817, 1000]


def random_value(rng, buckets):
    choice = rng.random()
    if choice < 0.2:
        return rng.choice(VALUE_EDGES)
    if choice < 0.4 and buckets:
        return rng.choice(buckets + VIEW_BOUNDS)  # on a bound: the bucket it closes
    if choice < 0.7:
        return rng.randint(0, 1000) / 8
    return rng.uniform(0, 1000)


def random_view(rng, family, index):
    """A view that selects this family alone (exactly, or by a glob of its
    own prefix), keeping or dropping some of its labels."""
    view = {"select": {"name": family["name"] if rng.random() < 0.5 else f"oracle_r{index}_*"}}
    if rng.random() < 0.5:
        view["select"]["kind"] = family["kind"]
    labels = family["labels"]
    mode = rng.choice(["keep", "drop", "drop", "none"])
    if mode == "keep":
        view["keep_labels"] = rng.sample(labels, rng.randint(0, len(labels)))
    elif mode == "drop":
        view["drop_labels"] = rng.sample(labels, rng.randint(1, len(labels))) + ["not_a_label"]
    if family["kind"] == "histogram" and rng.random() < 0.4:
        view["buckets"] = sorted(rng.sample(VIEW_BOUNDS, rng.randint(1, 5)))
    return view


def random_case(rng):
    """Four to six families (counters and histograms, one to four labels, up
    to 40 values each), a view on most of them, and 300 to 800 recordings."""
    families, views = [], []
    for index in range(rng.randint(4, 6)):
        labels = [f"l{j}" for j in range(rng.randint(1, 4))]
        name = f"oracle_r{index}_{'c' if index % 2 == 0 else 'h'}"
        if index % 2 == 0:
            family = counter(name, labels)
        else:
            family = histogram(name, labels, sorted(rng.sample([0.1, 1, 5, 10, 100, 500], 3)))
        family["values"] = [[f"v{k}" for k in range(rng.choice([1, 3, 40]))] for _ in labels]
        families.append(family)
        if rng.random() < 0.85:
            views.append(random_view(rng, family, index))
    recordings = []
    for _ in range(rng.randint(300, 800)):
        family = rng.choice(families)
        labels = [rng.choice(values) for values in family["values"]]
        recordings.append(rec(family["name"], labels, random_value(rng, family["buckets"])))
    for family in families:
        del family["values"]
    return {"families": families, "recordings": recordings}, views


if __name__ == "__main__":
    oc.skip_unless_receiver_installed()
    skip_unless_oracle_installed()
    unittest.main(verbosity=2)
