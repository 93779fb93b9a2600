"""test_node_faults.py — faults that must never mislead the operator, through
`tokenspeed-metrics simulate` with stderr a pipe (not a terminal): a plugin
that aborts or segfaults in emit is named with its file, output and signal;
the launcher reports the dead producer by its signal, counts it as crashed and
shuts the node down with exit status 4; a crash in the launcher is named too;
an output stuck in emit is reported from a thread it cannot hold, is failed
in the table, and the run exits 3; Prometheus alone is said so.

Environment: as test_launcher.py.
"""
import os
import re
import resource
import signal
import tempfile
import unittest

import cli_harness
from cli_harness import eventually
from test_launcher import Simulation, samples, scrape

PLUGIN_ROOT = cli_harness.PLUGIN_ROOT
EXIT_TIMEOUT_S = 60

# The crashes below are the point of the tests: no core files from them.
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def plugin_flags(folder):
    return ["--metrics-plugin-dir", os.path.join(PLUGIN_ROOT, folder)]


class NodeFaults(unittest.TestCase):
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

    def config(self, output, on):
        path = os.path.join(self.tmp, output + ".json")
        with open(path, "w") as file:
            file.write('{"%s": {"on": "%s"}}' % (output, on))
        return path

    def fault_run(self, output, on, *extra):
        return self.simulate("--metrics-reporters", "prometheus," + output,
                             "--metrics-reporter-config", self.config(output, on),
                             *plugin_flags(output), *extra)

    def assert_fatal_line(self, run, process, signal_name, output):
        plugin = os.path.join(PLUGIN_ROOT, output, output + ".so")
        pattern = (rf"^tokenspeed-metrics: fatal: {re.escape(process)} \(pid [0-9]+\): "
                   rf"{signal_name} \([a-z ]+\) in output '{output}' \(plugin file "
                   rf"'{re.escape(plugin)}'\) during emit; a plugin's crash is the process's "
                   rf"crash$")
        self.assertRegex(run.stderr_text, re.compile(pattern, re.MULTILINE), run.describe())

    def test_a_plugin_that_aborts_in_emit_is_named_and_the_node_shuts_down_with_status_4(self):
        # Only the schedulers record this gauge: they crash, the others do not.
        run = self.fault_run("aborts_in_emit", "tokenspeed:num_requests_running",
                             "--ranks", "1", "--duration", "600")
        status = run.wait(EXIT_TIMEOUT_S)  # the node shuts itself down long before --duration
        self.assertEqual(status, 4, run.describe())
        self.assert_fatal_line(run, "scheduler-0", "SIGABRT", "aborts_in_emit")
        self.assertRegex(run.stderr_text,
                         r"producer 'scheduler-0' \(pid [0-9]+\) crashed: killed by SIGABRT "
                         r"\(aborted\)")
        self.assertIn("shutting the node down: a producer ended unexpectedly", run.stderr_text)
        rows = [line for line in run.stdout_lines if line.startswith("scheduler-0 ")]
        self.assertEqual(len(rows), 1, run.describe())
        self.assertRegex(rows[0], r"^scheduler-0 +[0-9]+ +- +- +- +- +- +crashed: killed by "
                                  r"SIGABRT \(aborted\)$")
        self.assertTrue(any(re.match(r"^frontend +[0-9]+ +aborts_in_emit .* ok$", line)
                            for line in run.stdout_lines), run.describe())

    def test_a_segfault_in_emit_is_named_and_counted_on_metrics_when_the_node_keeps_running(self):
        run = self.fault_run("segfaults_in_emit", "tokenspeed:num_requests_running",
                             "--ranks", "2", "--on-producer-crash", "continue")
        url = run.metrics_url()

        def crashes():
            return {(labels["process"], labels["signal"]): value
                    for name, labels, value in samples(scrape(url))
                    if name == "tokenspeed_metrics_reporter_producer_crashes_total"}

        expected = {("scheduler-0", "SIGSEGV"): 1.0, ("scheduler-1", "SIGSEGV"): 1.0}
        self.assertEqual(eventually(lambda: crashes() == expected and crashes(), 30), expected,
                         run.describe())
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 4, run.describe())
        self.assert_fatal_line(run, "scheduler-0", "SIGSEGV", "segfaults_in_emit")
        self.assert_fatal_line(run, "scheduler-1", "SIGSEGV", "segfaults_in_emit")
        self.assertRegex(run.stderr_text, r"producer 'scheduler-1' \(pid [0-9]+\) crashed: "
                                          r"killed by SIGSEGV \(segmentation fault\)")

    def test_a_crash_in_the_launcher_is_named_before_it_dies(self):
        # Only the launcher records its startup.
        run = self.fault_run("segfaults_in_emit", "launcher_startup", "--ranks", "1",
                             "--duration", "600")
        status = run.wait(EXIT_TIMEOUT_S)
        self.assertEqual(status, -signal.SIGSEGV, run.describe())
        self.assert_fatal_line(run, "launcher", "SIGSEGV", "segfaults_in_emit")

    def test_an_output_stuck_in_emit_is_reported_failed_and_the_run_exits_3(self):
        run = self.fault_run("blocks_in_emit", "tokenspeed:num_requests_running",
                             "--ranks", "1", "--duration", "3", "--linger", "60",
                             "--metrics-reporter-queue-size", "16",
                             "--metrics-shutdown-timeout", "2")
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=EXIT_TIMEOUT_S)
        figures = {(name, labels.get("reporter")): value for name, labels, value
                   in samples(scrape(url)) if name.startswith("tokenspeed_metrics_reporter_")}
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 3, run.describe())

        # The stalled scheduler's drops, from a thread its stuck emit cannot hold.
        self.assertRegex(run.stderr_text, re.compile(
            r"^tokenspeed-metrics: output 'blocks_in_emit' in scheduler-0: [0-9,]+ events "
            r"dropped \(ring full\) in the last [0-9.]+ s; emit has not returned for [0-9.]+ s$",
            re.MULTILINE), run.describe())
        rows = [line for line in run.stdout_lines if line.startswith("scheduler-0 ")]
        self.assertEqual(len(rows), 1, run.describe())
        self.assertIn("failed: stalled in emit, abandoned at close", rows[0])
        # Its final figures reach /metrics: abandoned once, its queue discarded.
        key = ("tokenspeed_metrics_reporter_sinks_abandoned_total", "blocks_in_emit")
        self.assertEqual(figures.get(key), 1.0, figures)
        discarded = figures.get(("tokenspeed_metrics_reporter_events_discarded_total",
                                 "blocks_in_emit"))
        self.assertGreater(discarded, 0, figures)

    def test_an_output_disabled_by_a_failing_emit_is_failed_and_the_run_exits_3(self):
        run = self.simulate("--metrics-reporters", "prometheus,fails_in_emit",
                            *plugin_flags("fails_in_emit"), "--ranks", "1", "--duration", "1")
        self.assertEqual(run.wait(), 3, run.describe())
        rows = [line for line in run.stdout_lines if " fails_in_emit " in line]
        self.assertEqual(len(rows), 3, run.describe())  # launcher, scheduler-0, frontend
        # Every process that recorded an event failed at its first emit (a
        # busy machine may leave the scheduler none in its second).
        failed = [row for row in rows if row.split()[3] != "0"]
        self.assertGreaterEqual(len(failed), 2, run.describe())
        for row in failed:
            self.assertTrue(row.endswith("failed: disabled (emit failed)"), row)
        self.assertIn("exit status 3: an output or a producer failed", run.stderr_text)

    def test_with_prometheus_alone_the_summary_says_so(self):
        run = self.simulate("--ranks", "1", "--duration", "1")
        self.assertEqual(run.wait(), 0, run.describe())
        self.assertIn("outputs: Prometheus only (no external output selected); its totals are "
                      "on /metrics", run.stdout_lines)
        self.assertFalse(any(line.startswith("process ") for line in run.stdout_lines),
                         run.describe())


if __name__ == "__main__":
    unittest.main()
