"""test_python_plugins.py — Python plugin packages written as the
specification writes them, installed with pip into real virtual environments
and selected in `tokenspeed-metrics simulate` (the bridge embeds CPython):
the specification's example beside prometheus and jsonl, and one fault
package per rule.

Environment: TSM_BINARY, TSM_TEST_PLUGINS, TSM_TEST_TMPDIR (cli_harness.py),
TSM_JSONL_PLUGIN_DIR and TSM_PYTHON_PLUGIN_DIR (the build folders of jsonl.so
and python.so).
"""
import glob
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import cli_harness  # noqa: E402
import test_launcher  # noqa: E402
from plugin_venv import make_venv, venv_environment  # noqa: E402
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from simulate_harness import plugin_figures  # noqa: E402

JSONL_DIR = os.environ["TSM_JSONL_PLUGIN_DIR"]
PYTHON_DIR = os.environ["TSM_PYTHON_PLUGIN_DIR"]
COMMAND_TIMEOUT_S = 60  # hang guard only

# Every package but the one whose thread makes the whole bridge refused and
# the one that replaces example_output: each of those has a venv of its own.
MAIN_PACKAGES = ["example_metrics", "fault_raises_in_register", "fault_registers_prometheus",
                 "fault_raising_validate", "fault_validate_not_object",
                 "fault_live_producer_config", "fault_raising_emit", "fault_blocking_emit",
                 "fault_close_ignores_timeout", "reports_figures"]
VENVS = {}


def setUpModule():
    root = tempfile.mkdtemp(prefix="venvs-", dir=cli_harness.TMP_ROOT)
    VENVS["main"] = make_venv(root, "main", MAIN_PACKAGES)
    VENVS["thread"] = make_venv(root, "thread", ["example_metrics", "fault_thread_in_register"])
    VENVS["override"] = make_venv(root, "override", ["example_metrics", "override_example"])
    VENVS["with_engine"] = make_venv(root, "with_engine",
                                     ["example_metrics", "installed_tokenspeed_engine"])


def plugin_dir_flags(*dirs):
    flags = []
    for folder in dirs:
        flags += ["--metrics-plugin-dir", folder]
    return flags


class PythonPluginTest(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=cli_harness.TMP_ROOT)
        os.chmod(self.tmp, 0o755)
        self.simulations = []

    def tearDown(self):
        for simulation in self.simulations:
            simulation.kill()

    def write_config(self, config):
        path = os.path.join(self.tmp, "metrics.json")
        with open(path, "w") as file:
            json.dump(config, file)
        return path

    def simulate(self, venv, *args, extra_env=None):
        simulation = test_launcher.Simulation(
            *args, env=venv_environment(VENVS[venv], extra_env))
        self.simulations.append(simulation)
        return simulation

    def check(self, venv, *args, extra_env=None):
        """`tokenspeed-metrics check` inside a venv: (status, stdout, stderr lines)."""
        result = subprocess.run([cli_harness.BINARY, "check", "--enable-metrics",
                                 "--metrics-port", "0", *args],
                                capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                                env=venv_environment(VENVS[venv], extra_env), check=False)
        return result.returncode, result.stdout, [l for l in result.stderr.splitlines() if l]

    def assert_startup_error(self, venv, reporter, *parts, args=(), extra_env=None):
        status, _, lines = self.check(venv, "--metrics-reporters", reporter,
                                      *plugin_dir_flags(PYTHON_DIR), *args, extra_env=extra_env)
        errors = [line for line in lines if not line.startswith(cli_harness.WARNING_PREFIX)]
        self.assertEqual(status, 2, lines)
        self.assertEqual(len(errors), 1, lines)
        for part in (reporter, *parts):
            self.assertIn(part, errors[0])
        return errors[0], lines

    # ------------------------------------------------- the specification's example

    def test_the_specification_example_beside_prometheus_and_jsonl_gets_every_event(self):
        config = self.write_config({
            "example_output": {"endpoint": "file://" + os.path.join(self.tmp, "example-{pid}.jsonl")},
            "jsonl": {"path": os.path.join(self.tmp, "jsonl-{pid}.jsonl")},
        })
        run = self.simulate("main", "--metrics-reporters", "prometheus",
                            "--metrics-reporters", "jsonl", "--metrics-reporters", "example_output",
                            "--metrics-reporter-config", config,
                            *plugin_dir_flags(JSONL_DIR, PYTHON_DIR),
                            "--ranks", "2", "--request-rate", "100", "--duration", "2",
                            "--linger", "60", "--metrics-reporter-queue-size", "1048576")
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=COMMAND_TIMEOUT_S)
        exposition = test_launcher.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        rows = [line.split() for line in run.stdout_lines if " example_output " in line]
        self.assertEqual(len(rows), 4, run.describe())  # launcher, frontend, two schedulers
        for row in rows:
            self.assertEqual(row[5:8], ["0", "0", "ok"], row)

        counters, histogram_counts = {}, {}
        for name, _, value in test_launcher.samples(exposition):
            if not name.startswith("tokenspeed:"):
                continue
            if name.endswith("_total") and not name.startswith("tokenspeed:iteration_tokens_total"):
                counters[name] = counters.get(name, 0) + value
            elif name.endswith("_count"):
                family = name[:-len("_count")]
                histogram_counts[family] = histogram_counts.get(family, 0) + value

        def totals(pattern):
            incs, weights = {}, {}
            files = glob.glob(os.path.join(self.tmp, pattern))
            self.assertEqual(len(files), 4, files)
            for path in files:
                with open(path) as lines:
                    for line in lines:
                        event = json.loads(line)
                        if event["operation"] == "inc":
                            incs[event["metric"]] = incs.get(event["metric"], 0) + event["value"]
                        elif event["operation"] == "observe":
                            weights[event["metric"]] = weights.get(event["metric"], 0) + event["weight"]
            return incs, weights

        example_incs, example_weights = totals("example-*.jsonl")
        self.assertTrue(example_incs)
        self.assertEqual({name: example_incs.get(name, 0) for name in counters}, counters)
        self.assertLessEqual(set(example_incs), set(counters))
        self.assertTrue(example_weights)
        self.assertEqual({name: example_weights.get(name, 0) for name in histogram_counts},
                         histogram_counts)
        self.assertEqual(totals("jsonl-*.jsonl"), (example_incs, example_weights))

    def test_an_external_output_without_a_configuration_entry_receives_an_empty_object(self):
        # The example requires an endpoint: its validate sees {} and says so.
        self.assert_startup_error("main", "example_output", "'endpoint' is required")

    def test_the_example_validate_rejects_an_unsupported_setting(self):
        config = self.write_config({"example_output": {"endpoint": "file:///x", "colour": 1}})
        self.assert_startup_error("main", "example_output", "unsupported setting 'colour'",
                                  config, args=("--metrics-reporter-config", config))

    # ------------------------------------------------------------- registration

    def test_a_register_that_raises_rolls_back_its_names_and_selecting_one_says_why(self):
        error, lines = self.assert_startup_error("main", "partial_output", "unknown reporter",
                                                 "fault_raises_in_register",
                                                 "RuntimeError: the vendor SDK is not installed")
        warnings = [line for line in lines if "fault_raises_in_register" in line]
        self.assertTrue(any(line.startswith(cli_harness.WARNING_PREFIX) for line in warnings), lines)
        # The package's failure leaves the others available.
        status, _, lines = self.check("main", "--metrics-reporters", "raising_emit_output",
                                      *plugin_dir_flags(PYTHON_DIR))
        self.assertEqual(status, 0, lines)

    def test_a_package_disabled_through_tokenspeed_disable_plugins_is_an_unknown_reporter(self):
        error, lines = self.assert_startup_error(
            "main", "example_output", "unknown reporter", "'example_metrics'",
            "disabled by TOKENSPEED_DISABLE_PLUGINS",
            extra_env={"TOKENSPEED_DISABLE_PLUGINS": "example_metrics"})
        # Disabled is quiet, as for plugin files: no warning line.
        self.assertEqual([l for l in lines if l.startswith(cli_harness.WARNING_PREFIX)
                          and "example_metrics" in l], [], lines)

    def test_the_name_prometheus_is_reserved(self):
        status, _, lines = self.check("main", "--metrics-reporters", "prometheus",
                                      *plugin_dir_flags(PYTHON_DIR))
        self.assertEqual(status, 0, lines)
        warnings = [l for l in lines if "fault_registers_prometheus" in l]
        self.assertEqual(len(warnings), 1, lines)
        self.assertIn("reserved", warnings[0])

    def test_a_register_that_starts_a_thread_is_refused(self):
        error, _ = self.assert_startup_error("thread", "threaded_output", "unknown reporter",
                                             "fault_thread_in_register", "started a thread")

    def test_registering_an_existing_name_requires_override_and_override_replaces_it(self):
        config = self.write_config({"example_output": {
            "endpoint": "file://" + os.path.join(self.tmp, "override-{pid}.json")}})
        run = self.simulate("override", "--metrics-reporters", "example_output",
                            "--metrics-reporter-config", config, *plugin_dir_flags(PYTHON_DIR),
                            "--ranks", "1", "--request-rate", "50", "--duration", "2")
        self.assertEqual(run.wait(), 0, run.describe())
        files = glob.glob(os.path.join(self.tmp, "override-*.json"))
        # One per process that delivered an event (its sink starts with the
        # first: a busy machine may leave the scheduler none), the launcher's
        # and the frontend's at least.
        delivering = [row for row in (line.split() for line in run.stdout_lines)
                      if len(row) >= 8 and row[2] == "example_output" and row[4].isdigit()
                      and int(row[4]) > 0]
        self.assertGreaterEqual(len(delivering), 2, run.describe())
        self.assertEqual(len(files), len(delivering), (files, run.describe()))
        for path in files:
            with open(path) as file:
                self.assertEqual(json.load(file), {"overridden": True})

    def test_beside_an_installed_tokenspeed_engine_the_example_still_registers_here(self):
        config = self.write_config({"example_output": {"endpoint": "file:///dev/null"}})
        status, stdout, lines = self.check("with_engine", "--metrics-reporters", "example_output",
                                           "--metrics-reporter-config", config,
                                           *plugin_dir_flags(PYTHON_DIR))
        self.assertEqual(status, 0, lines)
        self.assertIn("example_output", stdout)

    def test_the_plugins_command_lists_the_python_outputs(self):
        result = subprocess.run([cli_harness.BINARY, "plugins", "--json",
                                 *plugin_dir_flags(PYTHON_DIR)], capture_output=True, text=True,
                                timeout=COMMAND_TIMEOUT_S, env=venv_environment(VENVS["main"]),
                                check=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        listing = json.loads(result.stdout)
        bridge = [p for p in listing["plugins"] if p["path"].endswith("/python.so")]
        self.assertEqual(len(bridge), 1, listing)
        self.assertEqual(bridge[0]["status"], "loaded")
        names = [reporter["name"] for reporter in bridge[0]["reporters"]]
        self.assertIn("example_output", names)
        self.assertIn("live_config_output", names)
        self.assertNotIn("partial_output", names)  # rolled back with its package
        self.assertNotIn("prometheus", names)
        # Why the other packages are missing, kept with the bridge's record.
        self.assertTrue(any("fault_raises_in_register" in note and "vendor SDK" in note
                            for note in bridge[0]["notes"]), bridge[0])

    # ----------------------------------------------------------- launcher rules

    def test_a_validate_that_raises_is_a_startup_error_naming_the_reporter(self):
        self.assert_startup_error("main", "raising_validate_output",
                                  "ValueError: unsupported setting 'colour'")

    def test_a_validate_result_that_is_not_an_object_is_a_startup_error(self):
        self.assert_startup_error("main", "list_validate_output", "not a JSON object")

    def test_a_live_object_in_producer_config_is_a_startup_error_and_the_session_is_closed(self):
        marker = os.path.join(self.tmp, "session-closed")
        config = self.write_config({"live_config_output": {"closed_marker": marker}})
        run = self.simulate("main", "--metrics-reporters", "live_config_output",
                            "--metrics-reporter-config", config, *plugin_dir_flags(PYTHON_DIR))
        self.assertEqual(run.wait(), 2, run.describe())
        errors = [l for l in run.stderr_text.splitlines()
                  if l and not l.startswith(cli_harness.WARNING_PREFIX)]
        self.assertEqual(len(errors), 1, run.describe())
        for part in ("live_config_output", "producer_config['socket']", "live object",
                     "socket.socket"):
            self.assertIn(part, errors[0])
        self.assertTrue(os.path.exists(marker), "the session start_node returned was not closed")

    # ---------------------------------------------------------------- sinks

    def test_a_sink_that_raises_is_disabled_without_stopping_other_outputs(self):
        config = self.write_config({
            "raising_emit_output": {"path": os.path.join(self.tmp, "raising-{pid}.json")},
            "jsonl": {"path": os.path.join(self.tmp, "jsonl-{pid}.jsonl")},
        })
        run = self.simulate("main", "--metrics-reporters", "prometheus,jsonl,raising_emit_output",
                            "--metrics-reporter-config", config,
                            *plugin_dir_flags(JSONL_DIR, PYTHON_DIR),
                            "--ranks", "1", "--request-rate", "100", "--duration", "0",
                            "--metrics-reporter-queue-size", "1048576")
        # The sink raises from its eleventh event: wait until it has done so
        # in both producers (however slowly a busy machine lets them record),
        # then stop the run.
        url = run.metrics_url()

        def failed_sinks():
            return sum(value for name, labels, value in
                       test_launcher.samples(test_launcher.scrape(url))
                       if name == "tokenspeed_metrics_reporter_sink_failures_total"
                       and labels.get("reporter") == "raising_emit_output")
        self.assertTrue(cli_harness.eventually(lambda: failed_sinks() >= 2, 60), run.describe())
        run.process.send_signal(signal.SIGTERM)
        # A disabled output is a failed one: simulate's exit status 3 says so.
        self.assertEqual(run.wait(), 3, run.describe())
        rows = {(row[0], row[2]): row for row in
                (line.split() for line in run.stdout_lines)
                if len(row) >= 8 and row[2] in ("jsonl", "raising_emit_output")}
        for process in ("frontend", "scheduler-0"):
            self.assertEqual(" ".join(rows[(process, "raising_emit_output")][7:]),
                             "failed: disabled (emit failed)", run.describe())
            self.assertEqual(rows[(process, "jsonl")][5:8], ["0", "0", "ok"], run.describe())
            self.assertGreater(int(rows[(process, "jsonl")][4]), 10)
        self.assertIn("RuntimeError: the destination rejected the event", run.stderr_text)
        # Closed at shutdown all the same, after its ten accepted events.
        closes = glob.glob(os.path.join(self.tmp, "raising-*.json"))
        emitted = []
        for path in closes:
            with open(path) as file:
                emitted.append(json.load(file)["emitted"])
        self.assertIn(10, emitted, run.describe())

    def test_a_sinks_figures_reach_the_summary_and_a_broken_figures_is_logged_once(self):
        run = self.simulate("main", "--metrics-reporters",
                            "prometheus,figures_output,broken_figures_output",
                            *plugin_dir_flags(PYTHON_DIR), "--ranks", "1", "--request-rate", "100",
                            "--duration", "2", "--metrics-reporter-queue-size", "1048576")
        self.assertEqual(run.wait(), 0, run.describe())
        rows = {(row[0], row[2]): row for row in
                (line.split() for line in run.stdout_lines)
                if len(row) >= 8 and row[2] in ("figures_output", "broken_figures_output")}
        figures = plugin_figures(run.stdout_lines, "figures_output")
        processes = {process for process, output in rows if output == "figures_output"}
        self.assertEqual(set(figures), processes, run.describe())
        for process in processes:
            delivered = int(rows[(process, "figures_output")][4])
            counts = figures[process]
            # The sink's own word: every third event refused, the rest sent.
            self.assertEqual((counts["sent"], counts["refused"]),
                             (delivered - delivered // 3, delivered // 3), f"{process}: {counts}")
            self.assertEqual((counts["lost"], counts["retries"], counts["pending"]), (0, 0, 0))
            status = " ".join(rows[(process, "figures_output")][7:])
            self.assertEqual(status, "ok" if delivered < 3 else
                             f"ok (plugin: {delivered // 3} refused, 0 lost)", run.describe())
            # A figures() that breaks the rules costs its figures, not its events.
            self.assertEqual(" ".join(rows[(process, "broken_figures_output")][5:]), "0 0 ok")
        self.assertEqual(plugin_figures(run.stdout_lines, "broken_figures_output"), {})
        broken = [line for line in run.stderr_text.splitlines()
                  if "figures() of the sink failed" in line]
        self.assertEqual(len(broken), len(processes), run.stderr_text)
        self.assertTrue(all("figures()['sent'] is -" in line for line in broken), broken)

    def shutdown_within_budget(self, reporter):
        budget_s = 2.0
        config = self.write_config({reporter: {"path": os.path.join(self.tmp, "close-{pid}.json")}})
        run = self.simulate("main", "--metrics-reporters", "prometheus," + reporter,
                            "--metrics-reporter-config", config, *plugin_dir_flags(PYTHON_DIR),
                            "--ranks", "1", "--metrics-shutdown-timeout", str(budget_s))
        url = run.metrics_url()
        # Events reached the sink: delivered (close test), or queued behind
        # the emit that blocks.
        reached = cli_harness.eventually(lambda: any(
            name in ("tokenspeed_metrics_reporter_events_delivered_total",
                     "tokenspeed_metrics_reporter_queue_depth")
            and labels.get("reporter") == reporter and value > 0
            for name, labels, value in test_launcher.samples(test_launcher.scrape(url))), 20)
        self.assertTrue(reached, run.describe())
        producers = run.producer_pids()
        sent = time.monotonic()
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        elapsed = time.monotonic() - sent
        # An abandoned output is a failed one: simulate's exit status 3.
        self.assertEqual(status, 3, run.describe())
        self.assertTrue(any("abandoned at close" in line for line in run.stdout_lines),
                        run.describe())
        # The plugin would hold an hour; the tree keeps its budget plus a
        # grace for process start-up and teardown on a busy machine.
        self.assertLess(elapsed, budget_s + 20.0, run.describe())
        for pid in producers.values():
            self.assertFalse(os.path.exists(f"/proc/{pid}"), f"producer {pid} still exists")
        return run

    def test_a_sink_whose_emit_blocks_is_abandoned_at_the_deadline(self):
        self.shutdown_within_budget("blocking_emit_output")

    def test_a_sink_whose_close_ignores_its_timeout_is_abandoned_and_got_the_remaining_budget(self):
        self.shutdown_within_budget("stuck_close_output")
        timeouts = []
        for path in glob.glob(os.path.join(self.tmp, "close-*.json")):
            with open(path) as file:
                timeouts.append(json.load(file)["timeout"])
        self.assertTrue(timeouts)
        for timeout in timeouts:
            self.assertTrue(0 < timeout <= 2.0, timeouts)


if __name__ == "__main__":
    unittest.main()
