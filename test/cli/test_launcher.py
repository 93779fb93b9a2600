"""test_launcher.py — the launcher and its producers, through
`tokenspeed-metrics simulate` run as an operator would: start_node in the
launcher only, the producer configuration across spawn, the shutdown order,
a producer killed mid-run, a plugin that ignores its close timeout, and the
jsonl events agreeing with the Prometheus counters.

Environment: TSM_BINARY, TSM_TEST_PLUGINS (cli_harness.py), and
TSM_JSONL_PLUGIN_DIR (the build folder holding jsonl.so).
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

import cli_harness
from cli_harness import eventually

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import simulate_harness  # noqa: E402
from simulate_harness import EXIT_TIMEOUT_S, STARTUP_TIMEOUT_S  # noqa: E402,F401

JSONL_DIR = os.environ["TSM_JSONL_PLUGIN_DIR"]


class Simulation(simulate_harness.Simulation):
    """A `simulate` run as the operator starts it: metrics on, /metrics on a
    free port."""

    def __init__(self, *args, command_prefix=(), env=None):
        super().__init__(["--enable-metrics", "--metrics-port", "0", *args], env=env,
                         command_prefix=command_prefix)


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def samples(text):
    """[(name, labels, value)] of an exposition."""
    return [(sample.name, sample.labels, sample.value)
            for family in text_string_to_metric_families(text) for sample in family.samples]


class LauncherTest(unittest.TestCase):
    maxDiff = None
    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=cli_harness.TMP_ROOT)
        self.simulations = []

    def tearDown(self):
        for simulation in self.simulations:
            simulation.kill()

    def simulate(self, *args):
        simulation = Simulation(*args)
        self.simulations.append(simulation)
        return simulation

    def write_config(self, config):
        path = os.path.join(self.tmp, "metrics.json")
        with open(path, "w") as file:
            json.dump(config, file)
        return path

    def test_start_node_runs_once_in_the_launcher_and_every_producer_gets_its_producer_config(self):
        log = os.path.join(self.tmp, "lifecycle.log")
        config = self.write_config({"lifecycle_log": {"log": log}})
        run = self.simulate("--metrics-reporters", "lifecycle_log",
                            "--metrics-reporter-config", config,
                            "--metrics-plugin-dir", os.path.join(cli_harness.PLUGIN_ROOT,
                                                                 "node_lifecycle_log"),
                            "--ranks", "2", "--duration", "1.5")
        self.assertEqual(run.wait(), 0, run.describe())
        launcher = run.process.pid
        with open(log) as file:
            lines = [line.split(" ", 2) for line in file.read().splitlines()]
        calls = [(call, int(pid), argument) for call, pid, argument in lines]

        # validate and start_node run once, in the launcher only.
        for once in ("validate", "start_node"):
            self.assertEqual([pid for call, pid, _ in calls if call == once], [launcher], calls)

        expected_producer_config = {"log": log, "session": str(launcher)}
        created = [c for c in calls if c[0] == "create_sink"]
        self.assertEqual(len(created), 4, calls)  # the launcher, 2 schedulers, the frontend
        self.assertEqual(len({pid for _, pid, _ in created}), 4, calls)
        for _, pid, argument in created:
            self.assertEqual(json.loads(argument), expected_producer_config,
                             f"create_sink in {pid}")

        launcher_calls = [call for call, pid, _ in calls if pid == launcher]
        self.assertEqual(launcher_calls, ["validate", "start_node", "create_sink", "sink_close",
                                          "session_close"])
        self.assertEqual(calls[-1][0], "session_close", "the node session is closed last")
        self.assertEqual(sum(1 for c in calls if c[0] == "session_close"), 1)
        self.assertEqual(sum(1 for c in calls if c[0] == "sink_close"), 4, calls)

    def test_a_failing_start_node_closes_the_earlier_sessions_and_fails_startup(self):
        log = os.path.join(self.tmp, "lifecycle.log")
        config = self.write_config({"lifecycle_log": {"log": log}})
        run = self.simulate("--metrics-reporters", "lifecycle_log,start_node_fails",
                            "--metrics-reporter-config", config,
                            "--metrics-plugin-dir", os.path.join(cli_harness.PLUGIN_ROOT,
                                                                 "node_lifecycle_log"),
                            "--metrics-plugin-dir", os.path.join(cli_harness.PLUGIN_ROOT,
                                                                 "start_node_faults"))
        self.assertEqual(run.wait(), 2, run.describe())
        errors = [line for line in run.stderr_text.splitlines() if "warning" not in line]
        self.assertEqual(len(errors), 1, run.describe())
        self.assertIn("reporter 'start_node_fails'", errors[0])
        self.assertIn("cannot reach the node collector at 127.0.0.1:1", errors[0])
        with open(log) as file:
            calls = [line.split(" ")[0] for line in file.read().splitlines()]
        self.assertEqual(calls, ["validate", "start_node", "session_close"],
                         "the earlier session is closed")
        self.assertEqual(run.producer_pids(), {})

    def test_a_producer_config_that_is_not_a_json_object_fails_startup(self):
        run = self.simulate("--metrics-reporters", "start_node_bad_config",
                            "--metrics-plugin-dir", os.path.join(cli_harness.PLUGIN_ROOT,
                                                                 "start_node_faults"))
        self.assertEqual(run.wait(), 2, run.describe())
        errors = [line for line in run.stderr_text.splitlines() if "warning" not in line]
        self.assertEqual(len(errors), 1, run.describe())
        self.assertIn("reporter 'start_node_bad_config'", errors[0])
        self.assertIn("JSON object", errors[0])

    def test_simulate_without_enable_metrics_says_nothing_was_recorded_and_no_producer_failed(self):
        result = cli_harness.run("simulate", "--ranks", "1", "--duration", "0.5")
        self.assertEqual(result.status, 0, result.stdout + result.stderr)
        self.assertIn("metrics disabled (no --enable-metrics): nothing was recorded\n",
                      result.stdout)
        # The producers exited cleanly: no row calls them failed.
        self.assertNotIn("failed", result.stdout)
        self.assertNotIn("producer '", result.stdout)

    def test_delivery_flags_out_of_range_are_startup_errors_naming_the_flag(self):
        for flag, value in [("--metrics-reporter-queue-size", "1"),
                            ("--metrics-reporter-queue-size", "16777217"),
                            ("--metrics-shutdown-timeout", "-1"),
                            ("--metrics-shutdown-timeout", "3601")]:
            for command in ("check", "simulate"):
                result = subprocess.run([cli_harness.BINARY, command, "--enable-metrics", flag, value],
                                        capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
                self.assertEqual(result.returncode, 2, (command, flag, value, result.stderr))
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertIn(f"key '{flag}'", result.stderr)
        accepted = subprocess.run([cli_harness.BINARY, "check", "--enable-metrics",
                                   "--metrics-port", "0", "--metrics-reporter-queue-size", "2",
                                   "--metrics-shutdown-timeout", "0"],
                                  capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)
        self.assertEqual(accepted.returncode, 0, accepted.stderr)

    def test_a_producer_killed_with_sigkill_loses_its_gauges_but_not_its_counters(self):
        run = self.simulate("--ranks", "2", "--metrics-shutdown-timeout", "3",
                            "--on-producer-crash", "continue")
        url = run.metrics_url()

        def gauge_ranks():
            return {labels["dp_rank"] for name, labels, _ in samples(scrape(url))
                    if name == "tokenspeed:num_requests_running"}

        self.assertEqual(eventually(lambda: gauge_ranks() == {"0", "1"} and gauge_ranks(), 60),
                         {"0", "1"}, run.describe())
        victim = run.producer_pids()["scheduler-1"]
        os.kill(victim, signal.SIGKILL)

        self.assertEqual(eventually(lambda: gauge_ranks() == {"0"} and gauge_ranks(), 60), {"0"},
                         "the dead producer's live gauges leave /metrics")
        drafts = {labels["dp_rank"]: value for name, labels, value in samples(scrape(url))
                  if name == "tokenspeed:spec_decode_num_drafts_total"}
        self.assertIn("1", drafts, "the dead producer's counters remain")
        self.assertGreater(drafts["1"], 0)

        run.process.send_signal(signal.SIGTERM)
        # A producer killed by a signal the launcher did not send crashed.
        self.assertEqual(run.wait(), 4, run.describe())
        self.assertIn(f"producer 'scheduler-1' (pid {victim}) crashed: killed by SIGKILL",
                      run.stderr_text)

    def test_sigterm_with_a_plugin_that_ignores_its_close_timeout_exits_within_the_budget(self):
        budget_s = 2.0
        run = self.simulate("--metrics-reporters", "prometheus,stuck_close",
                            "--metrics-plugin-dir", os.path.join(cli_harness.PLUGIN_ROOT,
                                                                 "ignores_close_timeout"),
                            "--ranks", "1", "--metrics-shutdown-timeout", str(budget_s))
        url = run.metrics_url()
        # Events recorded in every process (a frontend counter, a scheduler
        # histogram), so each has a stuck sink to close at shutdown.
        def recorded_everywhere():
            values = {}
            for name, _, value in samples(scrape(url)):
                values[name] = values.get(name, 0) + value
            return (values.get("tokenspeed:num_requests_total", 0) > 0 and
                    values.get("tokenspeed:iteration_tokens_total_count", 0) > 0)
        self.assertTrue(eventually(recorded_everywhere, 60), run.describe())
        producers = run.producer_pids()
        self.assertEqual(set(producers), {"scheduler-0", "frontend"})

        sent = time.monotonic()
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        elapsed = time.monotonic() - sent
        # Abandoned sinks are failed outputs.
        self.assertEqual(status, 3, run.describe())
        rows = [line for line in run.stdout_lines if " stuck_close " in line]
        self.assertTrue(rows, run.describe())
        for row in rows:
            self.assertTrue(row.endswith("failed: close ignored its timeout, abandoned at close"),
                            row)
        # The plugin would hold each close for 60 s; the tree keeps its
        # budget plus a grace for process start-up and teardown on a busy
        # machine.
        self.assertLess(elapsed, budget_s + 20.0, run.describe())
        for pid in producers.values():
            self.assertFalse(os.path.exists(f"/proc/{pid}"), f"producer {pid} still exists")

    def test_jsonl_events_summed_per_metric_equal_the_prometheus_counters(self):
        config = self.write_config({"jsonl": {"path": os.path.join(self.tmp, "events-{pid}.jsonl")}})
        run = self.simulate("--metrics-reporters", "prometheus", "--metrics-reporters", "jsonl",
                            "--metrics-reporter-config", config, "--metrics-plugin-dir", JSONL_DIR,
                            "--ranks", "2", "--request-rate", "200", "--duration", "2",
                            "--linger", "60",
                            # Rings large enough for the whole run: no event may overflow.
                            "--metrics-reporter-queue-size", "1048576")
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=EXIT_TIMEOUT_S)
        exposition = scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        # Nothing overflowed, so nothing may be missing.
        table = [line.split() for line in run.stdout_lines if " jsonl " in line]
        self.assertEqual(len(table), 4, run.describe())
        for row in table:
            self.assertEqual(row[5:8], ["0", "0", "ok"], row)

        prometheus_totals = {}
        for name, _, value in samples(exposition):
            if name.startswith("tokenspeed:") and name.endswith("_total") and \
                    not name.startswith("tokenspeed:iteration_tokens_total"):
                prometheus_totals[name] = prometheus_totals.get(name, 0) + value
        jsonl_totals = {}
        files = glob.glob(os.path.join(self.tmp, "events-*.jsonl"))
        self.assertEqual(len(files), 4, files)
        for path in files:
            with open(path) as file:
                for line in file:
                    event = json.loads(line)
                    if event["operation"] == "inc":
                        jsonl_totals[event["metric"]] = jsonl_totals.get(event["metric"], 0) + event["value"]
        self.assertTrue(jsonl_totals)
        # A series interned but never incremented shows 0 on /metrics and has
        # no event: absent from jsonl means 0.
        self.assertEqual({name: jsonl_totals.get(name, 0) for name in prometheus_totals},
                         prometheus_totals)
        self.assertLessEqual(set(jsonl_totals), set(prometheus_totals))


if __name__ == "__main__":
    unittest.main()
