"""fleet.py — several nodes at once into one real back end, the way
docs/operators.md ("Running a fleet") tells an operator to run them: three
`simulate` nodes, each named by --metrics-node-name and with its own seed,
push through remote_write into one real Prometheus 2.42 (or one real
VictoriaMetrics 1.79), through otlp into the OTLP receiver of the tests
(official decoders) and through statsd into one real StatsD server. One
node records for a while, stops, and starts again under the same name while
the others run.

- Gauges agree per node: `max without (process)` of each node's series
  equals that node's /metrics, and each OTLP resource's last values do too;
  the fleet's gauge queries (nodes summed, or their largest) equal the
  nodes' values combined.
- The fleet-wide sums (`sum without (process, node)` of every counter total,
  histogram bucket count, count and sum, over the samples since the restart)
  equal the sum of the nodes' own /metrics, and the OTLP points summed over
  every resource do too.
- The restart adds no series and no resource: the restarted node's
  processes continue their series (a counter reset) under the same node and
  process labels, so nothing is counted twice; Prometheus logs no
  out-of-order or duplicate sample.
- StatsD, which receives deltas, holds every counter total of every node
  and of both lives of the restarted one: nothing lost, nothing twice.
"""
import json
import math
import os
import signal
import subprocess
import time
import unittest

import otlp_common as oc
import remote_write_common as rw
import simulate_harness
import statsd_common as sc

NODES = ("gpu-node-a", "gpu-node-b", "gpu-node-c")
RESTARTED = "gpu-node-c"
RANKS = 2
# Each node's processes: the launcher, the frontend and a scheduler per rank.
PROCESSES = {"launcher", "frontend", *(f"scheduler-{rank}" for rank in range(RANKS))}
GAUGES = ("tokenspeed:num_requests_running", "tokenspeed:num_requests_waiting",
          "tokenspeed:kv_cache_usage_perc")
# How long the nodes that are not restarted record: long enough for the
# third node to be stopped and started again meanwhile, even on a busy
# machine (the test checks that it was).
FLEET_SECONDS = 25
# Finished requests per second per node. Plain StatsD sends every
# observation (a weighted one weight times): three nodes at this rate stay
# within what the single-threaded StatsD server reads on a busy machine.
REQUEST_RATE = 20
# How long the restarted node records in its first life, and at least in
# its second.
FIRST_LIFE_SECONDS = 3
SECOND_LIFE_MIN_SECONDS = 6


class FleetNode(simulate_harness.Simulation):
    """One node: `simulate` with prometheus (its /metrics), remote_write, otlp
    and statsd, named name; its configuration file in a folder of its own."""

    def __init__(self, tmp, name, seed, write_url, otlp_url, statsd_address, *args):
        folder = os.path.join(tmp, f"{name}-{time.monotonic_ns()}")
        os.makedirs(folder)
        config = os.path.join(folder, "metrics.json")
        with open(config, "w") as file:
            json.dump({"remote_write": {"url": write_url, "push_interval_ms": 200},
                       "otlp": {"endpoint": otlp_url, "export_interval_ms": 200},
                       "statsd": {"address": statsd_address, "flush_interval_ms": 200}}, file)
        self.name = name
        super().__init__([
            "--enable-metrics", "--metrics-port", "0",
            "--metrics-reporters", "prometheus,remote_write,otlp,statsd",
            "--metrics-reporter-config", config,
            "--metrics-plugin-dir", rw.PLUGIN_DIR, "--metrics-plugin-dir", oc.OTLP_DIR,
            "--metrics-plugin-dir", sc.STATSD_DIR,
            "--metrics-node-name", name, "--seed", str(seed), "--ranks", str(RANKS),
            "--request-rate", str(REQUEST_RATE), "--iteration-ms", "60000",
            "--metrics-reporter-queue-size", "1048576", *args])


class FleetTest:
    """Mixed into one TestCase per remote-write receiver."""
    maxDiff = None
    server_class = None

    def setUp(self):
        self.tmp = rw.make_tmp()
        self.server = self.server_class(self.tmp)
        self.receiver = oc.Receiver()
        self.statsd = sc.StatsdServer(self.tmp)
        self.nodes = []

    def tearDown(self):
        for node in self.nodes:
            node.kill()
        self.statsd.stop()
        self.receiver.stop()
        self.server.stop()

    def start(self, name, *args):
        node = FleetNode(self.tmp, name, 1 + NODES.index(name), self.server.write_url,
                         self.receiver.url + "/v1/metrics", self.statsd.address, *args)
        self.nodes.append(node)
        return node

    def stop(self, node):
        """SIGTERM, a clean exit, and every output of every process ok with
        nothing refused or lost by its plugin."""
        node.process.send_signal(signal.SIGTERM)
        self.assertEqual(node.wait(), 0, node.describe())
        for output in ("remote_write", "otlp", "statsd"):
            table = node.output_fields(output)
            self.assertEqual(set(table), PROCESSES, node.describe())
            for process, row in table.items():
                self.assertEqual(row[2:], ["0", "0", "ok"], f"{node.name} {process}: {row}")
            delivered = {process: int(row[1]) for process, row in table.items()}
            simulate_harness.assert_clean_plugin_figures(self, node, output, delivered,
                                                         node.describe())

    def pushed_processes(self, node_name, window=rw.WINDOW):
        """The process label values of node_name's engine series."""
        result = self.server.query(
            f'count by (process) (last_over_time({{__name__=~"tokenspeed:.+",'
            f'node="{node_name}"}}[{window}]))')
        return {sample["metric"]["process"] for sample in result}

    def test_fleet_sums_equal_the_nodes_and_a_restart_counts_once(self):
        started = time.monotonic()
        steady = [self.start(name, "--duration", str(FLEET_SECONDS), "--linger", "120")
                  for name in NODES if name != RESTARTED]
        first_life = self.start(RESTARTED, "--duration", str(FIRST_LIFE_SECONDS), "--linger", "120")
        url = first_life.metrics_url()
        first_life.wait_for_line("producers stopped", timeout=rw.EXIT_TIMEOUT_S)
        first_exposition = rw.scrape(url)
        # Stopped once both back ends hold the series of every process of it.
        self.assertTrue(rw.eventually(lambda: self.pushed_processes(RESTARTED) == PROCESSES,
                                      rw.AGREEMENT_TIMEOUT_S, interval=0.5),
                        self.pushed_processes(RESTARTED))
        self.assertTrue(rw.eventually(lambda: self.resources_of(RESTARTED) == PROCESSES,
                                      rw.AGREEMENT_TIMEOUT_S, interval=0.5))
        self.stop(first_life)
        restarted_at = time.time()
        stopped_early = [node.name for node in steady if any(
            line.startswith("producers stopped") for line in node.stdout_lines)]
        self.assertEqual(stopped_early, [], "the other nodes stopped recording before the restart")
        second_life = self.start(
            RESTARTED, "--duration",
            str(max(SECOND_LIFE_MIN_SECONDS, math.ceil(FLEET_SECONDS - (time.monotonic() - started)))),
            "--linger", "120")
        nodes = steady + [second_life]

        # While every producer runs, each node's gauges (set once, in the
        # first of 60 s scheduler iterations) agree with its own /metrics.
        gauges = [self.assert_gauges_agree(node) for node in nodes]
        self.assert_fleet_gauges(gauges)

        expositions = {}
        for node in nodes:
            url = node.metrics_url()
            node.wait_for_line("producers stopped", timeout=rw.EXIT_TIMEOUT_S + FLEET_SECONDS)
            expositions[node.name] = rw.scrape(url)
        for node in nodes:
            self.stop(node)

        # The fleet's sums: what an operator's dashboard shows.
        fleet = {}
        for exposition in expositions.values():
            for key, value in rw.cumulative_samples(exposition).items():
                fleet[key] = fleet.get(key, 0) + value
        for node_name, exposition in expositions.items():
            self.assertGreater(simulate_harness.sample_sum(
                exposition, "tokenspeed:generation_tokens_total"), 0, node_name)
        self.assert_promql_fleet_sums(fleet, restarted_at)
        self.assert_otlp_fleet_sums(fleet, restarted_at)
        self.assert_statsd_counters(list(expositions.values()) + [first_exposition])

        # The restart continued the node's series: no new process label, no
        # new resource, nothing refused by Prometheus.
        for name in NODES:
            self.assertEqual(self.pushed_processes(name), PROCESSES, name)
            self.assertEqual(self.resources_of(name), PROCESSES, name)
        self.assertEqual(sorted(self.server.label_values("node")), sorted(NODES))

    def resources_of(self, node_name):
        """The process names of node_name's OTLP resources."""
        return {instance.split("/", 1)[1] for instance in self.receiver.state()["resources"]
                if instance.startswith(node_name + "/")}

    def assert_gauges_agree(self, node):
        url = node.metrics_url()

        def compare():
            scraped = {key: value for key, value in rw.prometheus_series(rw.scrape(url)).items()
                       if key[0] in GAUGES}
            pushed = {}
            for name in GAUGES:
                for result in self.server.query(
                        f'max without (process) ({name}{{node="{node.name}"}})'):
                    labels = dict(result["metric"])
                    labels.pop("__name__", None)
                    labels.pop("node", None)
                    pushed[(name, frozenset(labels.items()))] = float(result["value"][1])
            exported = oc.otlp_gauges(
                {"series": [point for point in self.receiver.state()["series"]
                            if point["instance"].startswith(node.name + "/")]})
            agreed = (len(scraped) == len(GAUGES) * RANKS and
                      all(pushed.get(key) == value and exported.get(key) == value
                          for key, value in scraped.items()))
            return agreed, scraped, pushed, exported

        last = []
        rw.eventually(lambda: last.append(compare()) or last[-1][0], rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        agreed, scraped, pushed, exported = last[-1]
        self.assertTrue(agreed, f"{node.name}: /metrics {scraped}\nPromQL {pushed}\n"
                                f"OTLP {exported}\n{node.describe()}")
        return scraped

    def assert_fleet_gauges(self, per_node):
        """The fleet's gauge queries of docs/operators.md: each node's value
        (the largest over its processes), then the nodes summed (requests
        running) or their largest (KV-cache usage). per_node: each node's
        scraped gauges."""
        queries = {
            "tokenspeed:num_requests_running":
                ("sum without (node) (max without (process) ({name}))", sum),
            "tokenspeed:kv_cache_usage_perc": ("max without (process, node) ({name})", max),
        }
        for name, (query, combine) in queries.items():
            expected = {}
            for scraped in per_node:
                for (sample, labels), value in scraped.items():
                    if sample == name:
                        expected.setdefault(labels, []).append(value)
            expected = {labels: combine(values) for labels, values in expected.items()}

            def got():
                out = {}
                for result in self.server.query(query.format(name=name)):
                    labels = dict(result["metric"])
                    labels.pop("__name__", None)
                    out[frozenset(labels.items())] = float(result["value"][1])
                return out

            last = []
            rw.eventually(lambda: last.append(got()) or last[-1] == expected,
                          rw.AGREEMENT_TIMEOUT_S, interval=0.5)
            self.assertEqual(len(expected), RANKS, expected)
            self.assertEqual(last[-1], expected, f"{query.format(name=name)}")

    def assert_promql_fleet_sums(self, fleet, since):
        """`sum without (process, node) (last_over_time(x[w]))` over the
        samples pushed since the restart equals the fleet's /metrics sums."""
        def mismatches():
            at = time.time()
            window = f"{math.floor((at - since) * 1000)}ms"
            pushed = {}
            for name in sorted({name for name, _ in fleet}):
                for result in self.server.query(
                        f"sum without (process, node) (last_over_time({name}[{window}]))", at=at):
                    labels = dict(result["metric"])
                    labels.pop("__name__", None)
                    if "le" in labels:
                        labels["le"] = float(labels["le"])
                    pushed[(name, frozenset(labels.items()))] = float(result["value"][1])
            wrong = [f"{key[0]} {dict(key[1])}: /metrics {value}, PromQL {pushed.get(key, 0)}"
                     for key, value in sorted(fleet.items(), key=str)
                     if not math.isclose(pushed.get(key, 0), value, rel_tol=1e-9, abs_tol=1e-9)]
            wrong += [f"{key[0]} {dict(key[1])}: pushed, not on /metrics"
                      for key in set(pushed) - set(fleet)]
            return wrong

        last = []
        rw.eventually(lambda: last.append(mismatches()) or not last[-1], rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        self.assertEqual(last[-1], [])

    def assert_otlp_fleet_sums(self, fleet, since):
        """The OTLP points exported since the restart, summed over every
        resource, equal the fleet's /metrics sums."""
        since_ns = int(since * 1e9)
        state = self.receiver.state()
        recent = [point for point in state["series"] if int(point["time"]) >= since_ns]
        exported = oc.otlp_series({"series": recent})
        self.assertTrue(exported, "the receiver decoded no Sum or Histogram point")
        self.assertLessEqual(set(exported) - set(fleet), set(), "exported, not on /metrics")
        wrong = [f"{key[0]} {dict(key[1])}: /metrics {value}, OTLP {exported.get(key, 0)}"
                 for key, value in sorted(fleet.items(), key=str)
                 if not math.isclose(exported.get(key, 0), value, rel_tol=1e-9, abs_tol=1e-9)]
        self.assertEqual(wrong, [])


    def assert_statsd_counters(self, expositions):
        """Every counter total the StatsD server holds (deltas summed over
        every node and life) equals the sum of the expositions' totals."""
        totals = {}
        for exposition in expositions:
            for (name, labels), value in sc.prometheus_samples(exposition).items():
                if name.endswith("_total"):
                    key = sc.plain_key(name, sc.sanitized(labels))
                    totals[key] = totals.get(key, 0) + value

        def mismatches():
            counters = self.statsd.numbers("counters")
            wrong = [f"{key}: /metrics {value}, StatsD {counters.get(key, 0)}"
                     for key, value in sorted(totals.items())
                     if not math.isclose(counters.get(key, 0), value, rel_tol=1e-9, abs_tol=1e-9)]
            wrong += [f"{key}: in StatsD, not on /metrics" for key in counters
                      if key.startswith("tokenspeed.") and key not in totals]
            return wrong

        last = []
        rw.eventually(lambda: last.append(mismatches()) or not last[-1], rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        self.assertTrue(any(value > 0 for value in totals.values()), totals)
        self.assertEqual(last[-1], [], f"the StatsD server's socket dropped "
                                       f"{self.statsd.kernel_drops()} datagrams")


class DocumentedConfiguration(unittest.TestCase):
    """The configuration "Running a fleet" in docs/operators.md gives for
    every output passes `check` with the flags it gives."""

    def test_the_fleet_configuration_of_the_operators_guide_passes_check(self):
        guide = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "operators.md")
        with open(guide) as file:
            text = file.read()
        section = text[text.index("## Running a fleet"):]
        section = section[:section.index("\n## ", 1)]
        config_text = section[section.index("<<'JSON'\n") + len("<<'JSON'\n"):
                              section.index("\nJSON\n")]
        config = os.path.join(rw.make_tmp(), "metrics.json")
        with open(config, "w") as file:
            file.write(config_text)
        self.assertEqual(set(json.loads(config_text)), {"remote_write", "otlp", "statsd"})
        self.assertIn("--metrics-reporters prometheus,remote_write,otlp,statsd", section)
        checked = subprocess.run(
            [os.environ["TSM_BINARY"], "check", "--enable-metrics",
             "--metrics-reporters", "prometheus,remote_write,otlp,statsd",
             "--metrics-reporter-config", config, "--metrics-node-name", "gpu-node-7",
             "--metrics-plugin-dir", rw.PLUGIN_DIR, "--metrics-plugin-dir", oc.OTLP_DIR,
             "--metrics-plugin-dir", sc.STATSD_DIR],
            capture_output=True, text=True, timeout=rw.STARTUP_TIMEOUT_S)
        self.assertEqual(checked.returncode, 0, checked.stderr)


class PrometheusFleet(rw.OnPrometheus, FleetTest, unittest.TestCase):
    pass


class VictoriaMetricsFleet(rw.OnVictoriaMetrics, FleetTest, unittest.TestCase):
    pass


if __name__ == "__main__":
    oc.skip_unless_receiver_installed()
    sc.skip_unless_server_installed()
    rw.main()
