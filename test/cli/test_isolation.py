"""test_isolation.py — "isolation": "process" in an output's settings, as an
operator uses it: the host takes the keys out before the plugin's validate and
fails startup (exit 2, one line naming reporter, file and key) on a bad value;
through `tokenspeed-metrics simulate`, a plugin that segfaults or deadlocks in
emit costs only its own events: no process dies, the other output delivers
everything, the helper is restarted, the losses are counted in the table and
each crash is reported with the output, plugin file and signal.

Environment: as test_launcher.py.
"""
import json
import os
import re
import resource
import tempfile
import unittest

import cli_harness as h
from test_launcher import Simulation

EXIT_TIMEOUT_S = 60

# The helpers' crashes are the point of the tests: no core files from them.
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def row(run, process, output):
    rows = [line for line in run.stdout_lines
            if re.match(rf"^{re.escape(process)} +[0-9]+ +{re.escape(output)} ", line)]
    return rows[0] if len(rows) == 1 else None


def figures(line):
    """accepted, delivered, dropped, discarded and the status of a table row."""
    fields = line.split()
    return [int(value) for value in fields[3:7]] + [" ".join(fields[7:])]


class IsolationSettings(h.CliTestCase):

    def check_with(self, settings):
        path = self.write_config({"echo_config": settings})
        return self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                          "--metrics-reporter-config", path,
                          *h.dirs_flags(h.plugin_dir("echo_config"))), path

    def test_the_isolation_keys_never_reach_the_plugins_validate(self):
        result, _ = self.check_with({"endpoint": "x", "isolation": "process",
                                     "isolation_deadlock_timeout_ms": 2000})
        self.assert_ok(result)
        self.assertEqual(self.reporter_config(result.stdout_lines, "echo_config"),
                         {"endpoint": "x"})

    def test_a_bad_isolation_value_fails_startup_naming_reporter_file_and_key(self):
        cases = [
            ({"isolation": "thread"}, "echo_config.isolation", "unknown isolation 'thread'"),
            ({"isolation": 1}, "echo_config.isolation", "must be a string"),
            ({"isolation": None}, "echo_config.isolation", "must be a string"),
            ({"isolation": "process", "isolation_deadlock_timeout_ms": 10},
             "echo_config.isolation_deadlock_timeout_ms", "from 100 to 3600000"),
            ({"isolation_deadlock_timeout_ms": 1000},
             "echo_config.isolation_deadlock_timeout_ms", "applies only with"),
        ]
        for settings, key, message in cases:
            with self.subTest(settings=settings):
                result, path = self.check_with(settings)
                self.assert_startup_error(result, "reporter 'echo_config'", f"file '{path}'",
                                          f"key '{key}'", message)


class IsolatedFaults(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=h.TMP_ROOT)
        self.simulations = []

    def tearDown(self):
        for simulation in self.simulations:
            simulation.kill()

    def run_with(self, fault, extra_settings, status=0):
        settings = {
            "jsonl": {"path": os.path.join(self.tmp, "events-{pid}.jsonl")},
            # Only the schedulers record this gauge, on every iteration.
            fault: {"on": "tokenspeed:num_requests_running", "isolation": "process",
                    **extra_settings},
        }
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as out:
            json.dump(settings, out)
        simulation = Simulation(
            "--metrics-reporters", f"prometheus,jsonl,{fault}", "--metrics-reporter-config", config,
            "--metrics-plugin-dir", h.plugin_dir(fault),
            "--metrics-plugin-dir", os.environ["TSM_JSONL_PLUGIN_DIR"],
            "--ranks", "1", "--duration", "3")
        self.simulations.append(simulation)
        self.assertEqual(simulation.wait(EXIT_TIMEOUT_S), status, simulation.describe())
        return simulation

    def assert_contained(self, run, fault, reason, base_status="ok"):
        plugin = h.plugin_file(fault)
        self.assertNotIn("fatal:", run.stderr_text, run.describe())
        self.assertRegex(run.stderr_text, re.compile(
            rf"^tokenspeed-metrics: output '{fault}' in scheduler-0 \(plugin file "
            rf"'{re.escape(plugin)}'\): sink helper \(pid [0-9]+\) {reason}; 1 event lost in the "
            rf"helper; restarting in [0-9.]+ s$", re.MULTILINE), run.describe())
        # The other output of the same process delivers everything.
        for process in ("scheduler-0", "frontend", "launcher"):
            line = row(run, process, "jsonl")
            self.assertIsNotNone(line, run.describe())
            accepted, delivered, dropped, discarded, status = figures(line)
            self.assertEqual((delivered, dropped, discarded, status), (accepted, 0, 0, "ok"),
                             run.describe())
        # The isolated output: restarted, its losses counted, the identity exact.
        line = row(run, "scheduler-0", fault)
        self.assertIsNotNone(line, run.describe())
        accepted, delivered, dropped, discarded, status = figures(line)
        self.assertEqual(accepted, delivered + dropped + discarded, run.describe())
        match = re.match(re.escape(base_status) +
                         r" \(isolated: sink helper restarted ([0-9]+) times?, ([0-9]+) events? "
                         r"lost in it\)$", status)
        self.assertIsNotNone(match, run.describe())
        self.assertGreaterEqual(int(match.group(1)), 1, run.describe())
        self.assertGreaterEqual(int(match.group(2)), 1, run.describe())
        self.assertGreater(delivered, 0, run.describe())

    def test_a_segfaulting_isolated_output_loses_only_its_own_events(self):
        run = self.run_with("segfaults_in_emit", {})
        self.assert_contained(run, "segfaults_in_emit",
                              r"killed by SIGSEGV \(segmentation fault\)")

    def test_a_deadlocked_isolated_output_is_killed_restarted_and_loses_only_its_own_events(self):
        # The ring always holds events it blocks on: the last helper is still
        # stuck when close's deadline comes, is killed, and the output failed
        # (exit status 3), as an output stuck in emit in process is.
        run = self.run_with("blocks_in_emit", {"isolation_deadlock_timeout_ms": 300}, status=3)
        self.assert_contained(run, "blocks_in_emit",
                              r"made no progress while events waited for 0\.3 s \(deadlock "
                              r"timeout\); killed", base_status="failed: close failed")
        self.assertRegex(run.stderr_text, r"sink helper \(pid [0-9]+\) did not finish close "
                                          r"within its timeout; killed during close")


if __name__ == "__main__":
    unittest.main()
