"""remote_write_faults.py — the remote_write output when its receiver
misbehaves: down at start; down mid-run and back; 503 with Retry-After; 400
(dropped, not retried, the receiver's message logged); 429 dropped unless
retry_on_429; slower than the timeout; close while a request hangs; more
series than max_series. In each
the engine never blocks (no event of the host's queues is dropped, /metrics
keeps counting), the failures are counted in rate-limited log lines,
delivery resumes (PromQL equals the final /metrics) and close returns within
its budget. The faults a real Prometheus cannot be made to show come from a
proxy in front of it. The plugin's own figures account for every event
the host delivered to it: refused over max_series, lost when the receiver
never came up.
"""
import signal
import time
import unittest

import remote_write_common as rw
import simulate_harness

# Fast pushes and retries, so that each fault is seen within a second.
# A timeout far above what a forwarded request takes even on a busy machine:
# a request the client gave up on could still reach Prometheus after a newer
# one, which Prometheus refuses as out of order. The test of the timeout
# itself sets a short one.
FAST = {"push_interval_ms": 200, "timeout_ms": 10000, "initial_backoff_ms": 100,
        "max_backoff_ms": 400}
SHUTDOWN_BUDGET_S = 2.0
SHUTDOWN_GRACE_S = simulate_harness.SHUTDOWN_GRACE_S
FAILED = "plugin 'remote_write': remote write to"


class RemoteWriteFaults(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        rw.skip_unless(self, rw.PROMETHEUS, "prometheus")
        self.tmp = rw.make_tmp()
        self.prometheus = None
        self.proxy = None
        self.runs = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        if self.proxy is not None:
            self.proxy.stop()
        if self.prometheus is not None:
            self.prometheus.stop()
            self.assertEqual(self.prometheus.sample_errors(), [])

    def start_prometheus_behind_a_proxy(self):
        self.prometheus = rw.Prometheus(self.tmp)
        self.proxy = rw.FaultProxy(self.prometheus.write_url)
        return self.proxy.url

    def simulate(self, url, *args, **settings):
        run = rw.Simulation(self.tmp, dict(FAST, url=url, **settings),
                            "--ranks", "1", "--request-rate", "100",
                            "--metrics-shutdown-timeout", str(SHUTDOWN_BUDGET_S),
                            # Rings a delivery thread starved of CPU cannot overflow:
                            # a drop then means the plugin held the delivery thread up.
                            "--metrics-reporter-queue-size", "262144", *args)
        self.runs.append(run)
        return run

    def processes(self):
        try:
            return len(self.prometheus.label_values("process"))
        except OSError:
            return 0

    def wait_for_every_producer(self, count=3):
        """The launcher, one scheduler and the frontend each delivered."""
        self.assertTrue(rw.eventually(lambda: self.processes() >= count, 60),
                        f"processes: {self.processes()}")

    def assert_engine_kept_going(self, run, url, during):
        simulate_harness.assert_engine_kept_going(self, url, during, run.describe())

    def finish_and_compare(self, run, url):
        run.wait_for_line("producers stopped", timeout=rw.EXIT_TIMEOUT_S)
        exposition = rw.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        table = run.output_table()
        self.assertEqual(len(table), 3, run.describe())
        for process, row in table.items():
            # accepted == delivered, nothing dropped or discarded, status ok
            self.assertEqual(row[0], row[1], f"{process}: {row}\n{run.describe()}")
            self.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}\n{run.describe()}")
        rw.assert_promql_equals_scrape(self, self.prometheus, exposition)

    def test_receiver_down_at_start_delivery_resumes_when_it_comes_up(self):
        port = rw.free_port()
        run = self.simulate(f"http://127.0.0.1:{port}/api/v1/write", "--duration", "4",
                            "--linger", "60")
        url = run.metrics_url()
        self.assertTrue(rw.eventually(lambda: run.plugin_lines(FAILED), 60), run.describe())
        self.assert_engine_kept_going(run, url, 1.0)
        # Rate-limited: one line per process for the first failure (interval 10 s).
        self.assertLessEqual(len(run.plugin_lines(FAILED)), 3, run.describe())
        self.prometheus = rw.Prometheus(self.tmp, port)
        self.wait_for_every_producer()
        self.finish_and_compare(run, url)

    def test_receiver_down_mid_run_and_back_delivery_resumes(self):
        self.prometheus = rw.Prometheus(self.tmp)
        run = self.simulate(self.prometheus.write_url, "--duration", "5", "--linger", "60")
        url = run.metrics_url()
        self.wait_for_every_producer()
        self.prometheus.stop()
        self.assertTrue(rw.eventually(lambda: run.plugin_lines(FAILED), 60), run.describe())
        self.assert_engine_kept_going(run, url, 1.0)
        self.prometheus.start()  # the same data directory and port
        self.finish_and_compare(run, url)

    def test_503_with_retry_after_is_retried_after_the_servers_delay(self):
        url = self.start_prometheus_behind_a_proxy()
        self.proxy.script([{"status": 503, "retry_after": "1"}] * 3)
        run = self.simulate(url, "--duration", "3", "--linger", "60")
        metrics = run.metrics_url()
        self.wait_for_every_producer()
        self.finish_and_compare(run, metrics)
        lines = run.plugin_lines("HTTP 503")
        self.assertTrue(lines, run.describe())
        # The delay is the server's one second, not the 100 ms backoff.
        self.assertTrue(all("retrying in 1000 ms" in line for line in lines), lines)
        self.assertEqual(self.proxy.statuses()[:3], [503] * 3)
        # The protocol's headers, on every request.
        for request in self.proxy.requests:
            headers = request["headers"]
            self.assertEqual(headers.get("content-encoding"), "snappy")
            self.assertEqual(headers.get("content-type"), "application/x-protobuf")
            self.assertEqual(headers.get("x-prometheus-remote-write-version"), "0.1.0")

    def test_400_is_dropped_not_retried_and_its_message_logged(self):
        url = self.start_prometheus_behind_a_proxy()
        self.proxy.script([{"status": 400, "body": "out of order sample"}] * 2)
        run = self.simulate(url, "--duration", "3", "--linger", "60")
        metrics = run.metrics_url()
        self.wait_for_every_producer()
        self.finish_and_compare(run, metrics)
        dropped = run.plugin_lines("HTTP 400")
        self.assertTrue(dropped, run.describe())
        self.assertTrue(all("dropped a request of" in line and "out of order sample" in line
                            for line in dropped), dropped)
        self.assertFalse([line for line in dropped if "retrying" in line], dropped)

    def test_429_is_dropped_unless_retry_on_429(self):
        url = self.start_prometheus_behind_a_proxy()
        self.proxy.script([{"status": 429}] * 2)
        run = self.simulate(url, "--duration", "1")
        self.assertEqual(run.wait(), 0, run.describe())
        lines = run.plugin_lines("HTTP 429")
        self.assertTrue(lines and all("dropped a request of" in line for line in lines), lines)

        self.proxy.script([{"status": 429}] * 2)
        run = self.simulate(url, "--duration", "1", retry_on_429=True)
        self.assertEqual(run.wait(), 0, run.describe())
        lines = run.plugin_lines("HTTP 429")
        self.assertTrue(lines and all("retrying in" in line for line in lines), lines)

    def test_a_receiver_slower_than_the_timeout_is_given_up_on_and_retried(self):
        url = self.start_prometheus_behind_a_proxy()
        self.proxy.script([{"delay_ms": 5000}] * 3)
        run = self.simulate(url, "--duration", "4", "--linger", "60", timeout_ms=3000)
        metrics = run.metrics_url()
        self.assertTrue(rw.eventually(lambda: run.plugin_lines("timeout") or
                                      run.plugin_lines("Timeout"), 60), run.describe())
        self.assert_engine_kept_going(run, metrics, 0.5)
        self.wait_for_every_producer()
        self.finish_and_compare(run, metrics)

    def test_close_while_a_request_hangs_returns_within_the_budget(self):
        url = self.start_prometheus_behind_a_proxy()
        run = self.simulate(url, "--duration", "0", timeout_ms=60000)
        metrics = run.metrics_url()
        self.wait_for_every_producer()
        self.proxy.script(default={"hang": True})
        self.assertTrue(rw.eventually(lambda: self.proxy.statuses().count("hang") >= 3, 60))
        self.assert_engine_kept_going(run, metrics, 0.5)
        sent = time.monotonic()
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        elapsed = time.monotonic() - sent
        # Undelivered data makes close fail: the rows say so, simulate exits 3.
        self.assertEqual(status, 3, run.describe())
        self.assertTrue(any("failed: close failed" in line for line in run.stdout_lines),
                        run.describe())
        self.assertLess(elapsed, SHUTDOWN_BUDGET_S + SHUTDOWN_GRACE_S, run.describe())
        self.assertTrue(run.plugin_lines("not delivered to http://127.0.0.1:"), run.describe())

    def test_a_receiver_down_until_close_loses_what_was_not_sent_and_says_so(self):
        url = f"http://127.0.0.1:{rw.free_port()}/api/v1/write"
        run = self.simulate(url, "--duration", "1")
        # Undelivered data makes close fail: simulate exits 3.
        self.assertEqual(run.wait(), 3, run.describe())
        table = run.output_table()
        figures = run.plugin_figures("remote_write")
        self.assertEqual(len(table), 3, run.describe())
        self.assertEqual(set(figures), set(table), run.describe())
        for process, row in table.items():
            counts = figures[process]
            delivered = int(row[1])
            self.assertEqual(row[0], row[1], f"{process}: {row}")
            self.assertGreater(delivered, 0, f"{process}: {row}")
            # Nothing reached the receiver: every event delivered is lost.
            self.assertEqual(counts["sent"] + counts["refused"] + counts["lost"], delivered,
                             f"{process}: {counts}, delivered {delivered}")
            self.assertEqual(counts["lost"], delivered - counts["sent"] - counts["refused"])
            self.assertGreater(counts["lost"], 0, f"{process}: {counts}")
            self.assertEqual((counts["sent"], counts["refused"], counts["pending"]), (0, 0, 0),
                             f"{process}: {counts}")
            self.assertGreater(counts["retries"], 0, f"{process}: {counts}")
            self.assertEqual(row[2:], ["0", "0", f"failed: close failed (plugin: 0 refused, "
                                                 f"{counts['lost']} lost)"], f"{process}: {row}")
            summary = (f"at close: {counts['lost']} of {delivered} events did not reach {url}: "
                       f"0 refused (over max_series or invalid), {counts['lost']} lost")
            self.assertTrue(run.plugin_lines(summary), f"{summary}\n{run.describe()}")

    def test_series_beyond_max_series_are_dropped_counted_and_logged(self):
        self.prometheus = rw.Prometheus(self.tmp)
        run = self.simulate(self.prometheus.write_url, "--duration", "2", max_series=5)
        self.assertEqual(run.wait(), 0, run.describe())
        lines = run.plugin_lines("would exceed max_series=5")
        self.assertTrue(lines, run.describe())
        self.assertTrue(all("events dropped" in line and "in total" in line for line in lines))
        # The plugin accounts for every event the host delivered to it; those
        # over max_series it refused, the rest reached Prometheus; the status
        # and a line at close say so.
        figures = simulate_harness.assert_refused_over_max_series(
            self, run, "remote_write", self.prometheus.write_url, run.describe())
        # The schedulers record more than five series.
        self.assertGreater(figures["scheduler-0"]["refused"], 0, run.describe())
        # An engine series is at most two series without le (a histogram's _sum, _count).
        per_process = {}
        for labels in self.prometheus.series('{__name__=~"tokenspeed:.+", le=""}'):
            per_process[labels["process"]] = per_process.get(labels["process"], 0) + 1
        self.assertTrue(per_process)
        self.assertLessEqual(max(per_process.values()), 2 * 5, per_process)


if __name__ == "__main__":
    rw.main()
