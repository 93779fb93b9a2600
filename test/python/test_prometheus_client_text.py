"""generate_latest of tokenspeed_metrics.prometheus_client writes the text
prometheus_client 0.16 (python3-prometheus-client) writes for the same data,
byte for byte: labels sorted by name (whatever the definition order), values
and le by floatToGoString (3.0, le="0.0", 1e+06, +Inf), HELP escaping, a
counter's _total, a histogram's and a summary's sample order, custom
collectors' families after the node's.

text_format_program.py runs a launcher and two producers on each client. A
producer's generate_latest(REGISTRY) must equal prometheus_client's as a whole.
The launcher's registry with a MultiProcessCollector is compared family by
family: prometheus_client's multiprocess collector gives its families in the
order its directory lists its files, which nothing fixes (docs/python.md);
the series of an "all" or "liveall" gauge (one per process, pid label) come
in that order too and are compared as sorted lines. Custom collectors'
families, after the node's, are compared as one text.

The cases without processes compare the two libraries in this process."""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import prometheus_client as reference
import pytest
from prometheus_client import core as reference_core
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.utils import floatToGoString

from tokenspeed_metrics import prometheus_client as ours
from tokenspeed_metrics.prometheus_client import core as ours_core
from tokenspeed_metrics.prometheus_client._exposition_reader import respelled_exposition

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 300  # hang guard only: the machine may be loaded
# Families that only the host's exposition has: its own, and Info and Enum,
# which prometheus_client's multiprocess collector leaves out.
OURS_ONLY = ("app:build_info", "app_phase")


def run(client, workdir):
    os.makedirs(workdir)
    os.chmod(workdir, 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    env["TEXT_FORMAT_CLIENT"] = client
    result = subprocess.run([sys.executable, os.path.join(HERE, "text_format_program.py"), workdir],
                            capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def runs():
    """Both clients' outputs (one run each, shared by the tests of this
    module), in a 0755 folder under TSM_TEST_TMPDIR (see conftest.py)."""
    root = os.environ.get("TSM_TEST_TMPDIR", tempfile.gettempdir())
    os.makedirs(root, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="tsm-text-format-", dir=root)
    os.chmod(folder, 0o755)
    yield {client: run(client, os.path.join(folder, client))
           for client in ("prometheus_client", "tokenspeed_metrics")}
    shutil.rmtree(folder, ignore_errors=True)


def blocks(output):
    """{family name of its HELP line: its lines} of the launcher's text, the
    pid label replaced by the process's role."""
    roles = output["roles"]
    text = re.sub(r'pid="(\d+)"', lambda m: 'pid="%s"' % roles[m.group(1)], output["multiprocess"])
    found = {}
    for block in ("\n" + text).split("\n# HELP ")[1:]:
        found[block.split(" ", 1)[0]] = "# HELP " + block.rstrip("\n") + "\n"
    return found


def test_a_producers_registry_is_written_as_prometheus_client_writes_it(runs):
    for role in ("producer-1", "producer-2"):
        expected = runs["prometheus_client"]["producers"][role]
        assert 'le="0.0"' in expected and "1.23456789e+07" in expected  # what is compared
        assert runs["tokenspeed_metrics"]["producers"][role] == expected, role


def test_the_multiprocess_registry_is_written_as_prometheus_client_writes_it(runs):
    expected = blocks(runs["prometheus_client"])
    got = blocks(runs["tokenspeed_metrics"])
    node = {name for name in expected if name.startswith("app:")}
    assert len(node) == 13, sorted(expected)
    assert sorted(name for name in got if name not in expected
                  and not name.startswith("tokenspeed_metrics_")) == sorted(OURS_ONLY)
    for name in sorted(node):
        if name in ("app:gauge_all", "app:gauge_liveall"):
            # One series per process: prometheus_client's order is its
            # directory's order of the processes' files.
            assert sorted(got[name].splitlines()) == sorted(expected[name].splitlines()), name
        else:
            assert got[name] == expected[name], name
    # Labels sorted by name, le and values by floatToGoString, escapes kept.
    assert ('app:requests_total{alpha="b",zeta="m-q\\"\\\\\\nx"} 3e-07\n'
            in got["app:requests_total"])
    assert 'app:latency_seconds_bucket{le="1e+06",model="a"} 6.0\n' in got["app:latency_seconds"]
    assert got["app:latency_seconds"].index("_sum{") < got["app:latency_seconds"].index("_bucket")


def test_custom_collectors_follow_the_node_families_as_prometheus_client_writes_them(runs):
    texts = {}
    for client, output in runs.items():
        text = output["multiprocess"]
        tail = text[text.index("# HELP custom:"):]
        assert all(line.startswith(("# HELP custom:", "# TYPE custom:", "custom:"))
                   for line in tail.splitlines()), tail
        texts[client] = tail
    assert texts["tokenspeed_metrics"] == texts["prometheus_client"]
    assert "custom:routed_created" in texts["prometheus_client"]  # moved into a gauge family


class _Collector:
    """The same families, built with either library's core module."""

    def __init__(self, core, describe=True):
        self._core = core
        if not describe:
            self.describe = None

    def describe(self):
        return [self._core.CounterMetricFamily("c:routed", "Routed.")]

    def collect(self):
        core = self._core
        gauge = core.GaugeMetricFamily("c:values", "Values \\ and\nlines.", labels=["z", "a"])
        for i, value in enumerate((0, 1, -1, 0.1, 3.0, 1e22, 123456.0, 1234567.0, -1234567.0,
                                   5e-324, 1.7976931348623157e308, math.inf, -math.inf, math.nan,
                                   True, 7, 2 ** 53 + 1)):
            gauge.add_metric([str(i), 'q"\\\n}{,="'], value)
        yield gauge
        routed = core.CounterMetricFamily("c:routed_total", "Routed.", labels=["w"])
        routed.add_metric(["0"], 1, created=1.5, timestamp=core.Timestamp(1700000000, 5))
        yield routed
        yield core.HistogramMetricFamily("c:lat", "L.", buckets=[("-1", 0), ("+Inf", 1)],
                                         sum_value=3)
        yield core.Metric("c:raw", "Raw.", "untyped")


def duplicated(error):
    """The names of prometheus_client's "Duplicated timeseries" message."""
    assert str(error).startswith("Duplicated timeseries in CollectorRegistry: {"), error
    return sorted(re.findall(r"'([^']*)'", str(error)))


def test_custom_collectors_text_and_registration_match_prometheus_client():
    results = []
    for client, core in ((reference, reference_core), (ours, ours_core)):
        registry = client.CollectorRegistry()
        registry.register(_Collector(core))
        with pytest.raises(ValueError) as clash:  # the names its describe() claims
            registry.register(_Collector(core))
        registry.register(_Collector(core, describe=False))  # claims nothing: written twice
        results.append((client.generate_latest(registry), duplicated(clash.value),
                        sorted(registry._names_to_collectors)))
    assert results[1] == results[0]
    assert results[0][1] == ["c:routed", "c:routed_created", "c:routed_total"]


def test_a_collector_without_describe_claims_its_collected_names_only_with_auto_describe():
    for client, core in ((reference, reference_core), (ours, ours_core)):
        plain = client.CollectorRegistry()
        plain.register(_Collector(core, describe=False))
        plain.register(_Collector(core, describe=False))  # nothing claimed: accepted
        described = client.CollectorRegistry(auto_describe=True)
        described.register(_Collector(core, describe=False))
        with pytest.raises(ValueError) as clash:  # names from collect()
            described.register(_Collector(core, describe=False))
        assert duplicated(clash.value) == ["c:lat", "c:lat_bucket", "c:lat_count",
                                           "c:lat_created", "c:lat_sum", "c:raw", "c:routed",
                                           "c:routed_created", "c:routed_total", "c:values"]


def test_core_exports_what_prometheus_client_core_exports():
    for name in reference_core.__all__:
        assert hasattr(ours_core, name), name
    assert ours_core.REGISTRY is ours.REGISTRY


def test_generate_latest_writes_any_collector_as_prometheus_client_does():
    assert ours.generate_latest(_Collector(ours_core)) == reference.generate_latest(
        _Collector(reference_core))


HOST_TEXT = r"""# HELP h Help.
# TYPE h histogram
h_bucket{z="1",le="0"} 0
h_bucket{z="1",le="1e+06"} 2
h_bucket{z="1",le="+Inf"} 3
h_sum{z="1"} 2e+07
h_count{z="1"} 3
h_bucket{z="2",le="0"} 1
h_bucket{z="2",le="1e+06"} 1
h_bucket{z="2",le="+Inf"} 1
h_sum{z="2"} 0
h_count{z="2"} 1
# HELP s Help.
# TYPE s summary
s_sum{b="}",a="x"} 0.30000000000000004
s_count{b="}",a="x"} 2
# HELP g G \\ \n.
# TYPE g gauge
g{b="\\\",a=\\",a="\n"} NaN
g{b="2",a="1"} -1e-07
"""


def test_the_hosts_text_is_respelled_as_prometheus_client_writes_its_families():
    """Each family of the host's text, read by prometheus_client's parser and
    written by its generate_latest, in the sample order of its multiprocess
    collector (every _sum first) and of its own collect() (buckets, _count,
    _sum)."""
    families = list(text_string_to_metric_families(HOST_TEXT))
    for family in families:  # le as prometheus_client's multiprocess collector spells it
        for sample in family.samples:
            if "le" in sample.labels:
                sample.labels["le"] = floatToGoString(float(sample.labels["le"]))

    class Parsed:
        def __init__(self, order):
            self._order = order

        def collect(self):
            for family in families:
                if family.type == "histogram":
                    family.samples.sort(key=lambda s: self._order(s.name, s.labels.get("z")))
                elif family.type == "summary":
                    family.samples.sort(key=lambda s: not s.name.endswith("_count"))
                yield family

    def multiprocess(name, series):
        return (0, series) if name.endswith("_sum") else (1, series, name.endswith("_count"))

    def single(name, series):
        return (series, ("_bucket", "_count", "_sum").index(name[name.rindex("_"):]))

    for layout, order in (("multiprocess", multiprocess), ("single", single)):
        expected = reference.generate_latest(Parsed(order)).decode()
        assert respelled_exposition(HOST_TEXT, layout) == expected, layout


def test_le_of_a_sample_that_is_not_a_bucket_is_the_engines_own_label_value_kept_as_written():
    # SGLang's gauge histograms: gauges labelled gt and le.
    text = ('# HELP g Routing keys.\n# TYPE g gauge\ng{le="1",gt="0"} 2\n'
            '# HELP h Latency.\n# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 2\n'
            'h_sum 1.5\nh_count 2\n')
    respelled = respelled_exposition(text, "multiprocess")
    assert 'g{gt="0",le="1"} 2.0\n' in respelled
    assert 'h_bucket{le="1.0"} 2.0\n' in respelled
    gauge = [m for m in ours.registry.read_exposition(text) if m.name == "g"][0]
    assert gauge.samples[0].labels == {"le": "1", "gt": "0"}
