"""test_otlp_lost_events.py — a run whose output lost events does not end
"ok": the otlp output against a receiver (a local HTTP server) that refuses
every request delivers nothing, its rows read "failed: nothing delivered"
and simulate exits 3; one that refuses one delta request of scheduler-0
loses those events only, that row reads "degraded" and simulate exits 5
(docs/operators.md, "Exit status of simulate").

Environment: cli_harness.py's, and TSM_OTLP_DIR (the folder holding otlp.so).
"""
import http.server
import json
import os
import sys
import tempfile
import threading
import unittest

import cli_harness

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from simulate_harness import EXIT_TIMEOUT_S, Simulation  # noqa: E402

OTLP_DIR = os.environ["TSM_OTLP_DIR"]
EXIT_FAILED = 3
EXIT_EVENTS_LOST = 5


class Receiver(http.server.ThreadingHTTPServer):
    """An OTLP/HTTP receiver on a free port: answers 400 to each request
    refuse(body) is true of, 200 with an empty ExportMetricsServiceResponse
    to the others; counts both."""

    daemon_threads = True

    def __init__(self, refuse):
        super().__init__(("127.0.0.1", 0), Handler)
        self.refuse = refuse
        self.answered = {200: 0, 400: 0}
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1/metrics"

    def stop(self):
        self.shutdown()
        self.server_close()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 (the name http.server calls)
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        with self.server.lock:
            status = 400 if self.server.refuse(body) else 200
            self.server.answered[status] += 1
        self.send_response(status)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


class LostEvents(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=cli_harness.TMP_ROOT)

    def run_against(self, receiver, **settings):
        """A two-second run of one rank exporting to receiver; returns it
        once it exited."""
        self.addCleanup(receiver.stop)
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as out:
            json.dump({"otlp": {"endpoint": receiver.endpoint, "export_interval_ms": 200,
                                **settings}}, out)
        run = Simulation(["--enable-metrics", "--metrics-port", "0",
                          "--metrics-reporters", "prometheus,otlp",
                          "--metrics-reporter-config", config, "--metrics-plugin-dir", OTLP_DIR,
                          "--ranks", "1", "--duration", "2"])
        self.addCleanup(run.kill)
        self.status = run.wait(EXIT_TIMEOUT_S)
        return run

    def test_an_output_that_delivered_nothing_and_lost_events_fails_the_run(self):
        receiver = Receiver(lambda body: True)
        run = self.run_against(receiver)
        self.assertEqual(self.status, EXIT_FAILED, run.describe())
        self.assertEqual(receiver.answered[200], 0, run.describe())
        table = run.output_table("otlp")
        figures = run.plugin_figures("otlp")
        self.assertEqual(set(table), {"launcher", "scheduler-0", "frontend"}, run.describe())
        for process, (_, _, delivered, _, _, status) in table.items():
            # Every event the host delivered to the plugin is lost at close.
            counts = figures[process]
            self.assertEqual((counts["sent"], counts["refused"], counts["lost"]),
                             (0, 0, delivered), f"{process}: {counts}\n{run.describe()}")
            if delivered:
                self.assertEqual(status, f"failed: nothing delivered (plugin: 0 refused, "
                                         f"{delivered} lost)", f"{process}\n{run.describe()}")
        self.assertGreater(figures["scheduler-0"]["lost"], 0, run.describe())
        self.assertEqual(run.stderr_lines[-1], "tokenspeed-metrics: exit status 3: an output or a "
                                               "producer failed (see the table)", run.describe())

    def test_an_output_that_lost_some_events_is_degraded_and_the_run_exits_5(self):
        # Delta: a refused request's increments are gone (the plugin's lost).
        # The first request of scheduler-0 that carries data is refused.
        refused = []

        def refuse(body):
            if refused or b"scheduler-0" not in body:
                return False
            refused.append(len(body))
            return True

        receiver = Receiver(refuse)
        run = self.run_against(receiver, temporality="delta", compression="none")
        self.assertEqual(self.status, EXIT_EVENTS_LOST, run.describe())
        self.assertEqual(receiver.answered[400], 1, run.describe())
        table = run.output_table("otlp")
        figures = run.plugin_figures("otlp")
        counts = figures["scheduler-0"]
        self.assertGreater(counts["lost"], 0, run.describe())
        self.assertGreater(counts["sent"], 0, run.describe())
        self.assertEqual(table["scheduler-0"][5],
                         f"degraded (plugin: 0 refused, {counts['lost']} lost)", run.describe())
        for process in set(table) - {"scheduler-0"}:
            self.assertEqual(table[process][5], "ok", f"{process}\n{run.describe()}")
        self.assertIn("  degraded: the plugin lost events but sent others; failed: nothing "
                      "delivered: it lost events and sent none", run.stdout_lines, run.describe())
        self.assertEqual(run.stderr_lines[-1], "tokenspeed-metrics: exit status 5: an output lost "
                                               "events (a degraded row in the table)",
                         run.describe())


if __name__ == "__main__":
    unittest.main()
