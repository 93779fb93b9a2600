"""otlp_common.py — what the otlp tests share: the Node OTLP receiver
(test/otlp_receiver, official decoders), one `simulate` run with its output,
the Prometheus scrape, and the comparison of decoded OTLP data points with
/metrics (ExponentialHistogram buckets at the boundaries both share).
Starts only processes it stops again; binds 127.0.0.1 only.

Environment (set by test/integration/meson.build):
  TSM_BINARY         the tokenspeed-metrics executable
  TSM_OTLP_DIR       the build folder holding otlp.so
  TSM_OTLP_RECEIVER  test/otlp_receiver/receiver.js (its node_modules beside it)
  TSM_NODE           the node executable
  TSM_TEST_TMPDIR    where temporary files go
"""
import json
import math
import os
import subprocess
import sys
import urllib.request

import exponential_buckets
import simulate_harness
# Also used by the tests through this module.
from simulate_harness import (  # noqa: F401
    EXIT_TIMEOUT_S, eventually, free_port, make_tmp, rss_kib)

OTLP_DIR = os.environ["TSM_OTLP_DIR"]
RECEIVER_JS = os.environ["TSM_OTLP_RECEIVER"]
NODE = os.environ.get("TSM_NODE", "node")


def skip_unless_receiver_installed():
    """Exits 77 (meson: skipped) when the receiver's npm packages are
    missing. Called before unittest.main(): inside a test, unittest would
    turn the exit into an error."""
    modules = os.path.join(os.path.dirname(RECEIVER_JS), "node_modules",
                           "@opentelemetry", "otlp-transformer")
    if not os.path.isdir(modules):
        print(f"skipped: {modules} is missing (run npm ci in {os.path.dirname(RECEIVER_JS)})")
        sys.exit(77)


class Receiver:
    """The Node OTLP/HTTP receiver on one port; can be stopped and started
    again on the same port (its state starts empty each time). With tls (a
    tls_material.TlsMaterial) it serves HTTPS with the material's server
    certificate and requires a client certificate signed by its CA; the
    tests' own requests present the material's client certificate. With grpc
    it also serves OTLP/gRPC on a port of its own (grpc_endpoint); /control
    and /state stay on the HTTP port."""

    def __init__(self, port=0, tls=None, grpc=False):
        self.port = port
        self.tls = tls
        self.grpc = grpc
        self.grpc_port = None
        self.process = None
        self.start()

    def start(self):
        command = [NODE, RECEIVER_JS, "--port", str(self.port)]
        if self.grpc:
            command += ["--grpc-port", "0"]
        if self.tls is not None:
            command += ["--tls-cert", self.tls.path("server.crt"),
                        "--tls-key", self.tls.path("server.key"),
                        "--client-ca", self.tls.path("ca.crt")]
        self.process = subprocess.Popen(command,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        fields = line.split()  # "listening PORT" or "listening PORT grpc GRPC_PORT"
        if fields[:1] != ["listening"] or len(fields) != (4 if self.grpc else 2):
            self.process.kill()
            raise AssertionError(f"receiver did not start: {line!r} {self.process.stderr.read()}")
        self.port = int(fields[1])
        if self.grpc:
            self.grpc_port = int(fields[3])

    @property
    def url(self):
        return f"{'https' if self.tls is not None else 'http'}://127.0.0.1:{self.port}"

    @property
    def grpc_endpoint(self):
        return f"{'https' if self.tls is not None else 'http'}://127.0.0.1:{self.grpc_port}"

    def _open(self, request):
        context = None
        if self.tls is not None:
            import ssl
            context = ssl.create_default_context(cafile=self.tls.path("ca.crt"))
            context.load_cert_chain(self.tls.path("client.crt"), self.tls.path("client.key"))
        return urllib.request.urlopen(request, timeout=10, context=context)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        if self.process is not None:
            self.process.stdout.close()
            self.process.stderr.close()
        self.process = None

    def control(self, **settings):
        request = urllib.request.Request(self.url + "/control", data=json.dumps(settings).encode(),
                                         method="POST")
        with self._open(request) as response:
            response.read()

    def state(self):
        with self._open(self.url + "/state") as response:
            return json.loads(response.read())


class Simulation(simulate_harness.OutputSimulation):
    """One `simulate` process with prometheus and otlp (settings: the otlp
    output's settings object)."""

    def __init__(self, tmp, otlp_settings, *args):
        super().__init__(tmp, "otlp", otlp_settings, OTLP_DIR, *args)

    def output_table(self):
        """{process: [accepted, delivered, dropped, discarded, status]} of the otlp output."""
        return self.output_fields("otlp")


def scrape(url):
    return simulate_harness.scrape(url)[1]


def prometheus_series(text):
    """{(sample name, frozenset(labels)): value} of the engine's series."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("tokenspeed:"):
                continue
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = float(labels["le"])
            out[(sample.name, frozenset(labels.items()))] = sample.value
    return out


def otlp_series(state):
    """The receiver's cumulative points summed over instances, as Prometheus
    samples: monotonic Sums as NAME_total, Histograms as _bucket (cumulative,
    le), _count and _sum, ExponentialHistograms as _count and _sum (their
    buckets: assert_exponential_buckets_equal_prometheus). Gauges are left out
    (see otlp_gauges)."""
    out = {}

    def add(name, labels, value):
        key = (name, frozenset(labels.items()))
        out[key] = out.get(key, 0) + value

    for point in state["series"]:
        labels = dict(point["attributes"])
        if point["type"] == "sum":
            add(point["name"] + "_total", labels, point["value"])
        elif point["type"] == "exponential_histogram":
            add(point["name"] + "_count", labels, point["count"])
            add(point["name"] + "_sum", labels, point["sum"])
        elif point["type"] == "histogram":
            add(point["name"] + "_count", labels, point["count"])
            add(point["name"] + "_sum", labels, point["sum"])
            running = 0
            bounds = point["explicit_bounds"] + [math.inf]
            for bound, count in zip(bounds, point["bucket_counts"]):
                running += count
                add(point["name"] + "_bucket", dict(labels, le=float(bound)), running)
    return out


def otlp_gauges(state, combine=max):
    """{(name, labels): value}: each gauge's last value per instance, combined
    over instances as the metric's Prometheus gauge mode does (livemax: max)."""
    values = {}
    for point in state["series"]:
        if point["type"] == "gauge":
            key = (point["name"], frozenset(point["attributes"].items()))
            values.setdefault(key, []).append(point["value"])
    return {key: combine(vs) for key, vs in values.items()}


def exponential_families(state):
    """The names of the metrics the receiver took as ExponentialHistograms."""
    return {point["name"] for point in state["series"]
            if point["type"] == "exponential_histogram"}


def assert_otlp_equals_prometheus(test, state, exposition):
    """Every counter total, histogram bucket count, count and sum of /metrics
    equals the OTLP points summed over instances (a series that never had an
    event shows 0 on /metrics and has no point). The `le` lines of an
    exponential histogram are compared by
    assert_exponential_buckets_equal_prometheus, called here too: returns
    what it returns."""
    exponential = {name + "_bucket" for name in exponential_families(state)}
    prometheus = {key: value for key, value in prometheus_series(exposition).items()
                  if not key[0].endswith(("_created",)) and key[0] not in exponential and
                  (key[0].endswith(("_total", "_bucket", "_count", "_sum")))}
    otlp = otlp_series(state)
    test.assertTrue(otlp, "the receiver decoded no Sum or Histogram point")
    test.assertLessEqual(set(otlp) - set(prometheus), set(),
                         "OTLP series missing on /metrics")
    mismatches = []
    for key, value in sorted(prometheus.items(), key=str):
        got = otlp.get(key, 0)
        if not math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-9):
            mismatches.append(f"{key[0]} {dict(key[1])}: /metrics {value}, OTLP {got}")
    test.assertEqual(mismatches, [])
    return assert_exponential_buckets_equal_prometheus(test, state, exposition)


def assert_exponential_buckets_equal_prometheus(test, state, exposition):
    """Each ExponentialHistogram point the receiver kept (with delta
    temporality, each window) has count == zero_count + its buckets, min and
    max exactly when it counted something; and per series, the points of
    every instance merged (at their lowest scale) have the buckets /metrics
    shows as `le` lines: compared at the lower of the two scales (the lines'
    is read from their spacing; a single bucket per sign does not tell it,
    and the OTLP one is taken), where every boundary is one of both, so the
    cumulative count at each boundary 2^((offset+k+1)/2^scale) equals the
    line's. Returns {(name, labels): (OTLP scale, /metrics scale)} of the
    series compared."""
    windows = {}
    problems = []
    for point in state["series"]:
        if point["type"] != "exponential_histogram":
            continue
        key = (point["name"], frozenset(point["attributes"].items()))
        for window in point["windows"]:
            buckets = exponential_buckets.from_otlp(window)
            if window["count"] != exponential_buckets.total(buckets):
                problems.append(f"{key[0]} {dict(key[1])}: count {window['count']}, zero count "
                                f"and buckets {exponential_buckets.total(buckets)}")
            if (window["min"] is not None, window["max"] is not None) != (window["count"] > 0,) * 2:
                problems.append(f"{key[0]} {dict(key[1])}: min {window['min']}, max "
                                f"{window['max']} of {window['count']} observations")
            windows.setdefault(key, []).append(window)
    families = exponential_families(state)
    lines = {}  # (name, labels): [(le, cumulative count)]
    for (name, labels), value in prometheus_series(exposition).items():
        family = name[:-len("_bucket")]
        if name.endswith("_bucket") and family in families:
            labels = dict(labels)
            le = labels.pop("le")
            lines.setdefault((family, frozenset(labels.items())), []).append((le, value))
    compared = {}
    for key, series_lines in sorted(lines.items(), key=str):
        if key not in windows:
            if series_lines[-1][1] != 0:  # +Inf: a series with observations needs points
                problems.append(f"{key[0]} {dict(key[1])}: on /metrics, no OTLP point")
            continue
        otlp = exponential_buckets.merge(exponential_buckets.from_otlp(w) for w in windows[key])
        try:
            scraped, count = exponential_buckets.from_classic_lines(
                sorted(series_lines), windows[key][0]["zero_threshold"], otlp["scale"])
        except AssertionError as error:
            problems.append(f"{key[0]} {dict(key[1])}: {error}")
            continue
        common = min(otlp["scale"], scraped["scale"])
        if exponential_buckets.at_scale(otlp, common) != exponential_buckets.at_scale(
                scraped, common) or count != exponential_buckets.total(otlp):
            problems.append(f"{key[0]} {dict(key[1])} at scale {common}: OTLP {otlp}, "
                            f"/metrics {scraped} (count {count})")
        compared[key] = (otlp["scale"], scraped["scale"])
    missing = set(windows) - set(lines)
    test.assertEqual(missing, set(), "OTLP ExponentialHistogram series missing on /metrics")
    test.assertEqual(problems, [])
    return compared


def assert_nothing_dropped_by_the_host(test, run):
    """Every producer's row of the output table: accepted == delivered,
    nothing dropped or discarded, never disabled."""
    table = run.output_table()
    test.assertEqual(len(table), 3, run.describe())
    for process, row in table.items():
        test.assertEqual(row[0], row[1], f"{process}: {row}\n{run.describe()}")
        test.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}\n{run.describe()}")
