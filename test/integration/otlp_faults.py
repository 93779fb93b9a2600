"""otlp_faults.py — the otlp output when its receiver misbehaves: down at
start; down mid-run and back; 503 with Retry-After; 400 (dropped, not
retried; with delta temporality its increments are lost, counted so by the
plugin and missing at the receiver); slower than the timeout; close while a request hangs; a partial
success; and more series than max_series. In each the engine never blocks
(no event of the host's queues is dropped, /metrics keeps counting), memory
stays bounded, the failures are counted in rate-limited log lines, delivery
resumes (the final totals equal /metrics) and close returns within its
budget.
"""
import signal
import time
import unittest

import otlp_common as oc
import simulate_harness

# Fast exports and retries, so that each fault is seen within a second.
FAST = {"export_interval_ms": 200, "timeout_ms": 500, "initial_backoff_ms": 100,
        "max_backoff_ms": 400}
# More than the producers' resident memory may grow during a fault.
RSS_GROWTH_LIMIT_KIB = 16 * 1024
SHUTDOWN_BUDGET_S = 2.0
SHUTDOWN_GRACE_S = simulate_harness.SHUTDOWN_GRACE_S


class OtlpFaults(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = oc.make_tmp()
        self.receiver = None
        self.runs = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        if self.receiver is not None:
            self.receiver.stop()

    def simulate(self, port, *args, **settings):
        run = oc.Simulation(self.tmp, dict(FAST, endpoint=f"http://127.0.0.1:{port}/v1/metrics",
                                           **settings),
                            "--ranks", "1", "--request-rate", "100",
                            "--metrics-shutdown-timeout", str(SHUTDOWN_BUDGET_S),
                            # Rings that a delivery thread starved of CPU by a busy
                            # machine cannot overflow: a drop then means the plugin
                            # held the delivery thread up.
                            "--metrics-reporter-queue-size", "262144", *args)
        self.runs.append(run)
        return run

    def instances(self):
        return set(self.receiver.state()["resources"])

    def wait_for_every_producer(self, count=3):
        """The launcher, one scheduler and the frontend each delivered."""
        self.assertTrue(oc.eventually(lambda: len(self.instances()) >= count, 60),
                        f"instances: {self.instances()}")

    def assert_engine_kept_going(self, run, url, during):
        simulate_harness.assert_engine_kept_going(self, url, during, run.describe())

    def finish_and_compare(self, run, url):
        """Stops the producers, compares the final totals, shuts down."""
        run.wait_for_line("producers stopped", timeout=oc.EXIT_TIMEOUT_S)
        exposition = oc.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        oc.assert_nothing_dropped_by_the_host(self, run)
        oc.assert_otlp_equals_prometheus(self, self.receiver.state(), exposition)

    def test_receiver_down_at_start_delivery_resumes_when_it_comes_up(self):
        port = oc.free_port()
        run = self.simulate(port, "--duration", "8", "--linger", "60")
        url = run.metrics_url()
        failures = oc.eventually(lambda: run.plugin_lines("plugin 'otlp': export to"), 60)
        self.assertTrue(failures, run.describe())
        producers = run.children()
        # The first failure comes at the first export, while the producers
        # still warm up (their series, the run files' pages, thread stacks):
        # memory is measured from after a second of steady recording, so
        # that it shows what waiting for the receiver costs, not the start.
        self.assert_engine_kept_going(run, url, 1.0)
        rss_before = {pid: oc.rss_kib(pid) for pid in producers}
        self.assert_engine_kept_going(run, url, 1.5)
        for pid in producers:
            self.assertLess(oc.rss_kib(pid) - rss_before[pid], RSS_GROWTH_LIMIT_KIB, pid)
        # Rate-limited: one line per process for the first failure (interval 10 s).
        self.assertLessEqual(len(run.plugin_lines("plugin 'otlp': export to")), 3, run.describe())
        self.receiver = oc.Receiver(port)
        self.wait_for_every_producer()
        self.finish_and_compare(run, url)

    def test_receiver_down_mid_run_and_back_delivery_resumes(self):
        self.receiver = oc.Receiver()
        port = self.receiver.port
        run = self.simulate(port, "--duration", "5", "--linger", "60")
        url = run.metrics_url()
        self.wait_for_every_producer()
        self.receiver.stop()
        self.assertTrue(oc.eventually(lambda: run.plugin_lines("plugin 'otlp': export to"), 60),
                        run.describe())
        self.assert_engine_kept_going(run, url, 1.0)
        self.receiver = oc.Receiver(port)  # a fresh receiver: it knows nothing yet
        self.wait_for_every_producer(2)
        self.finish_and_compare(run, url)

    def test_503_with_retry_after_is_retried_after_the_servers_delay(self):
        self.receiver = oc.Receiver()
        self.receiver.control(responses=[{"status": 503, "retry_after": "1"}] * 3)
        run = self.simulate(self.receiver.port, "--duration", "3", "--linger", "60")
        url = run.metrics_url()
        self.wait_for_every_producer()
        self.finish_and_compare(run, url)
        lines = run.plugin_lines("HTTP 503")
        self.assertTrue(lines, run.describe())
        # The delay is the server's one second, not the 100 ms backoff.
        self.assertTrue(all("retrying in 1000 ms" in line for line in lines), lines)
        statuses = [r.get("status") for r in self.receiver.state()["requests"]]
        self.assertEqual(statuses[:3], [503] * 3, statuses)

    def test_400_is_dropped_and_not_retried(self):
        self.receiver = oc.Receiver()
        self.receiver.control(responses=[{"status": 400}] * 2)
        run = self.simulate(self.receiver.port, "--duration", "3", "--linger", "60")
        url = run.metrics_url()
        self.wait_for_every_producer()
        self.finish_and_compare(run, url)
        dropped = run.plugin_lines("HTTP 400")
        self.assertTrue(dropped, run.describe())
        self.assertTrue(all("dropped a request of" in line for line in dropped), dropped)
        self.assertFalse([line for line in dropped if "retrying" in line], dropped)
        self.assertFalse(run.plugin_lines("close failed"), run.describe())

    def test_400_with_delta_temporality_loses_those_deltas_and_says_so(self):
        # A delta request is the only copy of its increments: refused by the
        # receiver, they are gone. The plugin counts them lost, the output's
        # status says so, and the receiver's totals fall short by them.
        self.receiver = oc.Receiver()
        self.receiver.control(responses=[{"status": 400}] * 2)
        run = self.simulate(self.receiver.port, "--duration", "3", "--linger", "60",
                            temporality="delta")
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=oc.EXIT_TIMEOUT_S)
        exposition = oc.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        statuses = [r.get("status") for r in self.receiver.state()["requests"]]
        self.assertEqual(statuses[:2], [400, 400], statuses)
        self.assertNotIn(400, statuses[2:], statuses)  # never retried
        table = run.output_table()
        figures = run.plugin_figures("otlp")
        self.assertEqual(set(figures), set(table), run.describe())
        lost = 0
        for process, row in table.items():
            counts = figures[process]
            self.assertEqual(row[0], row[1], f"{process}: {row}")  # the host dropped nothing
            self.assertEqual(sum(counts[fate] for fate in ("sent", "refused", "lost", "pending")),
                             int(row[1]), f"{process}: {counts} {row}")
            if counts["lost"]:
                self.assertEqual(row[4], simulate_harness.lost_events_status(counts),
                                 f"{process}: {row}")
            lost += counts["lost"]
        self.assertGreater(lost, 0, run.describe())
        # Lost events do not end the run "ok": degraded (5), or failed (3)
        # where a process lost events and sent none.
        self.assertEqual(status, simulate_harness.lost_events_exit_status(figures),
                         run.describe())
        self.assertNotEqual(status, 0, run.describe())
        # What the receiver holds is /metrics less the refused deltas.
        prometheus = {key: value for key, value in oc.prometheus_series(exposition).items()
                      if key[0].endswith(("_total", "_count"))}
        exported = oc.otlp_series(self.receiver.state())
        short = [key for key, value in prometheus.items() if exported.get(key, 0) < value]
        self.assertTrue(short, "the receiver's totals miss nothing")
        self.assertFalse([key for key, value in prometheus.items() if exported.get(key, 0) > value])

    def test_a_receiver_slower_than_the_timeout_is_given_up_on_and_retried(self):
        self.receiver = oc.Receiver()
        self.receiver.control(responses=[{"delay_ms": 1500}] * 3)
        run = self.simulate(self.receiver.port, "--duration", "4", "--linger", "60")
        url = run.metrics_url()
        self.assertTrue(oc.eventually(lambda: run.plugin_lines("timeout") or
                                      run.plugin_lines("Timeout"), 60), run.describe())
        self.assert_engine_kept_going(run, url, 0.5)
        self.wait_for_every_producer()
        self.finish_and_compare(run, url)
        statuses = [r.get("status") for r in self.receiver.state()["requests"]]
        self.assertIn("client gone", statuses)

    def test_close_while_a_request_hangs_returns_within_the_budget(self):
        self.receiver = oc.Receiver()
        run = self.simulate(self.receiver.port, "--duration", "0", timeout_ms=60000)
        url = run.metrics_url()
        self.wait_for_every_producer()
        self.receiver.control(default={"hang": True})
        # Every process has a request hanging now.
        self.assertTrue(oc.eventually(lambda: sum(1 for r in self.receiver.state()["requests"]
                                                  if r.get("status") == "hang") >= 3, 60))
        self.assert_engine_kept_going(run, url, 0.5)
        sent = time.monotonic()
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        elapsed = time.monotonic() - sent
        # What could not be delivered makes close report a failure: the
        # output's rows say so and simulate exits with the failed-output status.
        self.assertEqual(status, 3, run.describe())
        self.assertTrue(any("failed: close failed" in line for line in run.stdout_lines),
                        run.describe())
        self.assertLess(elapsed, SHUTDOWN_BUDGET_S + SHUTDOWN_GRACE_S, run.describe())
        # The loss is reported, naming the endpoint.
        self.assertTrue(run.plugin_lines("not delivered to http://127.0.0.1:"), run.describe())

    def test_a_partial_success_is_logged_with_the_receivers_message(self):
        self.receiver = oc.Receiver()
        self.receiver.control(responses=[{"rejected_data_points": 2,
                                          "error_message": "2 points had no name"}])
        run = self.simulate(self.receiver.port, "--duration", "1")
        self.assertEqual(run.wait(), 0, run.describe())
        lines = run.plugin_lines("accepted the export partly")
        self.assertEqual(len(lines), 1, run.describe())
        self.assertIn("2 data points rejected: 2 points had no name", lines[0])
        self.assertFalse(run.plugin_lines("retrying"), run.describe())  # a 200 is not retried

    def test_series_beyond_max_series_are_dropped_counted_and_logged(self):
        self.receiver = oc.Receiver()
        run = self.simulate(self.receiver.port, "--duration", "2", max_series=5)
        self.assertEqual(run.wait(), 0, run.describe())
        lines = run.plugin_lines("would exceed max_series=5")
        self.assertTrue(lines, run.describe())
        self.assertTrue(all("events dropped" in line and "in total" in line for line in lines))
        # The host's delivery thread was never held up; the plugin accounts
        # for every event delivered to it, those over max_series refused, and
        # the status and a line at close say so.
        figures = simulate_harness.assert_refused_over_max_series(
            self, run, "otlp", f"http://127.0.0.1:{self.receiver.port}/v1/metrics",
            run.describe())
        self.assertGreater(figures["scheduler-0"]["refused"], 0, run.describe())
        per_instance = {}
        for point in self.receiver.state()["series"]:
            per_instance[point["instance"]] = per_instance.get(point["instance"], 0) + 1
        self.assertTrue(per_instance)
        self.assertLessEqual(max(per_instance.values()), 5, per_instance)


if __name__ == "__main__":
    oc.skip_unless_receiver_installed()
    unittest.main()
