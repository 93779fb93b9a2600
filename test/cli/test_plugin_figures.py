"""test_plugin_figures.py — the delivery figures a plugin reports through
tsm_sink.report_figures (ABI minor 3) and the process it reads from
tsm_sink.process, with the real test plugin test/plugins/reports_figures
(every third event refused, every fifth a retry) through
`tokenspeed-metrics simulate`: the summary's plugin figures lines and the
output's status, the tokenspeed_metrics_reporter_plugin_* series on /metrics
per process, and the identity the plugin saw, in process and with
"isolation": "process" (the figures cross the sink helper's shared channel,
and a restarted helper's add onto those of the helper that crashed).

Environment: as test_launcher.py.
"""
import json
import os
import re
import resource
import signal
import socket
import sys
import tempfile
import unittest

import cli_harness as h
from test_launcher import EXIT_TIMEOUT_S, Simulation, samples, scrape

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from simulate_harness import PLUGIN_FIGURES_HEADING, plugin_figures  # noqa: E402

# The helpers' crashes are part of a test: no core files from them.
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

OUTPUT = "reports_figures"
PROCESSES = {"launcher", "scheduler-0", "scheduler-1", "frontend"}


def table_rows(run, output):
    """{process: (pid, accepted, delivered, dropped, discarded, status)} of one
    output's rows in the summary table."""
    rows = {}
    for line in run.stdout_lines:
        match = re.match(rf"^(\S+) +([0-9]+) +{re.escape(output)} +([0-9]+) +([0-9]+) +([0-9]+) "
                         rf"+([0-9]+)  (.+)$", line)
        if match:
            rows[match[1]] = (*(int(match[i]) for i in range(2, 7)), match[7])
    return rows


def read_calls(path):
    """[(call, pid, {key: value})] of the plugin's call log."""
    with open(path, encoding="utf-8") as log:
        calls = []
        for line in log.read().splitlines():
            call, pid, detail = line.split(" ", 2)
            calls.append((call, int(pid), dict(part.split("=", 1) for part in detail.split())))
        return calls


class PluginFigures(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=h.TMP_ROOT)
        self.log = os.path.join(self.tmp, "calls.log")
        self.simulations = []

    def tearDown(self):
        for simulation in self.simulations:
            simulation.kill()

    def run_to_the_end(self, *args, **extra_settings):
        """A run of two ranks (args: more flags); returns it and /metrics
        scraped once the producers stopped, before the launcher's exit."""
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as out:
            json.dump({OUTPUT: {"log": self.log, **extra_settings}}, out)
        run = Simulation("--metrics-reporters", f"prometheus,{OUTPUT}",
                         "--metrics-reporter-config", config,
                         "--metrics-plugin-dir", h.plugin_dir(OUTPUT),
                         "--ranks", "2", "--request-rate", "50", "--duration", "2",
                         "--linger", "60", *args)
        self.simulations.append(run)
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=EXIT_TIMEOUT_S)
        exposition = scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(EXIT_TIMEOUT_S), 0, run.describe())
        return run, exposition

    def assert_figures(self, run, exposition):
        """The figures lines, the status column and /metrics say what the
        plugin counted of the events the host delivered to it."""
        rows = table_rows(run, OUTPUT)
        self.assertEqual(set(rows), PROCESSES, run.describe())
        self.assertIn(PLUGIN_FIGURES_HEADING, run.stdout_lines, run.describe())
        figures = plugin_figures(run.stdout_lines, OUTPUT)
        self.assertEqual(set(figures), PROCESSES, run.describe())
        for process, (_, accepted, delivered, dropped, discarded, status) in rows.items():
            counts = figures[process]
            self.assertEqual((delivered, dropped, discarded), (accepted, 0, 0), run.describe())
            self.assertEqual(counts, {"sent": delivered - delivered // 3,
                                      "refused": delivered // 3, "lost": 0,
                                      "retries": delivered // 5, "pending": 0},
                             f"{process}: delivered {delivered}\n{run.describe()}")
            expected = f"ok (plugin: {counts['refused']} refused, 0 lost)" if counts["refused"] \
                else "ok"
            self.assertEqual(status, expected, f"{process}\n{run.describe()}")
        self.assertGreater(figures["scheduler-0"]["refused"], 0, run.describe())

        # /metrics, scraped once the producers had closed their sinks: the
        # series of every process, with its name as the process label.
        events = {}
        other = {}
        for name, labels, value in samples(exposition):
            if name == "tokenspeed_metrics_reporter_plugin_events_total":
                self.assertEqual(labels["reporter"], OUTPUT, labels)
                events[(labels["process"], labels["fate"])] = value
            elif name in ("tokenspeed_metrics_reporter_plugin_retries_total",
                          "tokenspeed_metrics_reporter_plugin_pending_events"):
                other[(name, labels["process"])] = value
        self.assertEqual({process for process, _ in events}, PROCESSES, exposition)
        for process in PROCESSES - {"launcher"}:  # closed: their final figures
            counts = figures[process]
            for fate in ("sent", "refused", "lost"):
                self.assertEqual(events[(process, fate)], counts[fate], f"{process} {fate}")
            self.assertEqual(
                other[("tokenspeed_metrics_reporter_plugin_retries_total", process)],
                counts["retries"], process)
        # The launcher's sink was still open: no more than its final figures,
        # and its pending gauge, which is live (it left with the producers).
        for fate in ("sent", "refused", "lost"):
            self.assertLessEqual(events[("launcher", fate)], figures["launcher"][fate])
        pending = {process for name, process in other
                   if name == "tokenspeed_metrics_reporter_plugin_pending_events"}
        self.assertEqual(pending, {"launcher"}, exposition)
        self.assertEqual(
            other[("tokenspeed_metrics_reporter_plugin_pending_events", "launcher")], 0)
        return rows, figures

    def assert_identities(self, rows, isolated, node):
        """The plugin saw each producer's process as the table names it, on
        node."""
        calls = read_calls(self.log)
        created = [(pid, detail) for call, pid, detail in calls if call == "create_sink"]
        self.assertEqual(len(created), len(PROCESSES), calls)
        seen = {detail["name"]: (pid, detail) for pid, detail in created}
        self.assertEqual(set(seen), PROCESSES, calls)
        for process, (sink_pid, detail) in seen.items():
            pid = rows[process][0]
            role, _, rank = process.rpartition("-")
            expected = {"name": process, "role": role or process, "rank": rank if role else "-1",
                        "node": node, "pid": str(pid)}
            self.assertEqual(detail, expected, calls)
            # In process the sink runs in the producer; isolated, in its
            # helper, while the identity still names the producer.
            if isolated:
                self.assertNotEqual(sink_pid, pid, calls)
            else:
                self.assertEqual(sink_pid, pid, calls)
        return calls

    def test_figures_reach_the_summary_and_metrics_with_the_process_the_plugin_saw(self):
        run, exposition = self.run_to_the_end()
        rows, figures = self.assert_figures(run, exposition)
        # Without --metrics-node-name the node is the host name.
        calls = self.assert_identities(rows, isolated=False, node=socket.gethostname())
        # What each sink said in close is what the summary shows for its process.
        by_pid = {pid: process for process, (pid, *_) in rows.items()}
        for call, pid, detail in calls:
            if call == "sink_close":
                counts = figures[by_pid[pid]]
                self.assertEqual((int(detail["sent"]), int(detail["refused"])),
                                 (counts["sent"], counts["refused"]), calls)

    def test_figures_of_an_isolated_output_cross_the_sink_helper(self):
        run, exposition = self.run_to_the_end("--metrics-node-name", "gpu-node-7",
                                              isolation="process")
        rows, figures = self.assert_figures(run, exposition)
        calls = self.assert_identities(rows, isolated=True, node="gpu-node-7")
        closes = [detail for call, _, detail in calls if call == "sink_close"]
        self.assertEqual(len(closes), len(PROCESSES), calls)
        self.assertEqual(sum(int(c["sent"]) for c in closes),
                         sum(f["sent"] for f in figures.values()), calls)
        self.assertEqual(sum(int(c["refused"]) for c in closes),
                         sum(f["refused"] for f in figures.values()), calls)

    def test_a_restarted_helpers_figures_add_onto_the_crashed_ones(self):
        # Each producer's first helper dies at its 20th event, having
        # reported the figures of 19; its successor reports its own.
        run, _ = self.run_to_the_end(isolation="process", crash_at=20)
        rows = table_rows(run, OUTPUT)
        figures = plugin_figures(run.stdout_lines, OUTPUT)
        calls = read_calls(self.log)
        crashed = {detail["name"]: int(detail["events"]) for call, _, detail in calls
                   if call == "crash"}
        self.assertEqual(set(crashed), PROCESSES - {"launcher"}, calls)  # one event only
        closes = {detail["name"]: detail for call, _, detail in calls if call == "sink_close"}
        self.assertEqual(set(closes), PROCESSES, calls)
        for process, before in crashed.items():
            self.assertEqual(before, 19, calls)
            after = closes[process]
            expected = {"sent": before - before // 3 + int(after["sent"]),
                        "refused": before // 3 + int(after["refused"]), "lost": 0,
                        "retries": before // 5 + int(after["retries"]), "pending": 0}
            self.assertEqual(figures[process], expected, f"{process}\n{calls}\n{run.describe()}")
            # Both helpers together account for what the host delivered.
            delivered = rows[process][2]
            self.assertEqual(expected["sent"] + expected["refused"], delivered, run.describe())
            status = rows[process][5]
            self.assertTrue(status.startswith("ok (isolated: sink helper restarted 1 time, "),
                            run.describe())
            self.assertTrue(status.endswith(f" (plugin: {expected['refused']} refused, 0 lost)"),
                            run.describe())


if __name__ == "__main__":
    unittest.main()
