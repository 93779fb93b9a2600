"""statsd_agreement.py — after a `simulate` run with prometheus and statsd
(plain flavour), what the real StatsD server (npm statsd 0.9.0) holds, read
through its admin port, equals the Prometheus scrape: every counter total,
every histogram's count as the number of timer values (weights sent as
repeated values), their sum in milliseconds, and each gauge's last value.
The plugin reports every event delivered to it as sent.
"""
import math
import signal
import unittest

import simulate_harness
import statsd_common as sc

# How long the server may take to read what was sent: a hang guard only.
AGREEMENT_TIMEOUT_S = 60


class StatsdAgreesWithPrometheus(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = sc.make_tmp()
        self.server = sc.StatsdServer(self.tmp)
        self.runs = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        self.server.stop()

    def simulate(self, settings, *args):
        run = sc.Simulation(self.tmp, dict({"address": self.server.address,
                                            "flush_interval_ms": 200}, **settings), *args)
        self.runs.append(run)
        return run

    def check_totals(self, settings):
        run = self.simulate(settings, "--ranks", "2", "--request-rate", "20", "--duration", "2",
                            "--linger", "60", "--metrics-reporter-queue-size", "1048576")
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=sc.EXIT_TIMEOUT_S)
        exposition = sc.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        rows = run.output_rows()
        self.assertEqual(len(rows), 4, run.describe())
        for process, row in rows.items():
            self.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}")
        # The plugin's own figures: every event delivered to it was sent, and
        # /metrics showed them per process before the exit.
        delivered = {process: int(row[1]) for process, row in rows.items()}
        simulate_harness.assert_clean_plugin_figures(self, run, "statsd", delivered,
                                                     run.describe())
        simulate_harness.assert_plugin_series_for_every_process(
            self, exposition, "statsd", run.plugin_figures("statsd"), run.describe())

        prometheus = {(name, sc.sanitized(labels)): value
                      for (name, labels), value in sc.prometheus_samples(exposition).items()}
        # The server reads its socket on its own time (later on a busy
        # machine): compare until what it holds agrees, or the deadline.
        last = []
        sc.eventually(lambda: last.append(self.compare(prometheus)) or not last[-1][0],
                      AGREEMENT_TIMEOUT_S, interval=0.5)
        mismatches, counters, timers = last[-1]
        self.assertEqual(counters.get("statsd.bad_lines_seen"), 0.0, counters)
        self.assertTrue(any(sc.plain_key(name, labels) in counters
                            for name, labels in prometheus if name.endswith("_total")),
                        "no counter reached the StatsD server")
        for key in counters:
            if key.startswith("tokenspeed."):
                name, labels = sc.statsd_key_to_series(key)
                self.assertIn((name, labels), prometheus, f"{key} is not on /metrics")
        self.assertTrue(timers, "no timer reached the StatsD server")
        for key in timers:
            name, labels = sc.statsd_key_to_series(key)
            self.assertIn((name + "_count", labels), prometheus, f"{key} has no _count on /metrics")
        self.assertEqual(mismatches, [], f"the StatsD server's socket dropped "
                                         f"{self.server.kernel_drops()} datagrams")

    def compare(self, prometheus):
        """(mismatches, counters, timers): the lines where the server's
        counters and timers differ from the scrape, and what it holds."""
        counters = self.server.numbers("counters")
        timers = self.server.timer_counts()
        mismatches = []
        for (name, labels), value in prometheus.items():
            if name.endswith("_total"):
                got = counters.get(sc.plain_key(name, labels), 0)
                if not math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-9):
                    mismatches.append(f"{name} {dict(labels)}: /metrics {value}, StatsD {got}")
            elif name.endswith("_count") and value > 0:
                key = sc.plain_key(name[:-len("_count")], labels)
                count, total = timers.get(key, (0, None))
                if count != value:
                    mismatches.append(f"{key}: /metrics count {value}, StatsD {count} values")
                if total is not None:
                    scale = 1000.0 if name.endswith("_seconds_count") else 1.0
                    want = prometheus[(name[:-len("_count")] + "_sum", labels)] * scale
                    if not math.isclose(total, want, rel_tol=1e-6, abs_tol=1e-6):
                        mismatches.append(f"{key}: /metrics sum {want}, StatsD {total}")
        return mismatches, counters, timers

    def test_counter_totals_and_timer_counts_and_sums_equal_the_scrape(self):
        self.check_totals({})

    def test_without_aggregation_every_event_is_sent_and_the_totals_are_the_same(self):
        self.check_totals({"aggregation": False})

    def test_each_gauge_last_value_equals_the_scrape(self):
        # One scheduler iteration in 30 to 90 s: the gauges are set once and
        # stay while the producers run (their live gauges leave /metrics when
        # they stop), so /metrics and StatsD can be compared meanwhile.
        run = self.simulate({}, "--ranks", "2", "--iteration-ms", "60000")
        url = run.metrics_url()
        names = ("tokenspeed:num_requests_running", "tokenspeed:num_requests_waiting",
                 "tokenspeed:kv_cache_usage_perc")
        last = []

        def agreed():
            prometheus = {(name, sc.sanitized(labels)): value
                          for (name, labels), value in sc.prometheus_samples(sc.scrape(url)).items()
                          if name in names}
            gauges = {sc.statsd_key_to_series(key): value
                      for key, value in self.server.numbers("gauges").items()
                      if key.startswith("tokenspeed.")}
            same = bool(prometheus) and set(prometheus) <= set(gauges) and \
                all(gauges[key] == value for key, value in prometheus.items())
            last.append((same, prometheus, gauges))
            return same

        sc.eventually(agreed, 60)
        same, prometheus, gauges = last[-1]
        self.assertTrue(same, f"/metrics {prometheus}\nStatsD {gauges}\n{run.describe()}")
        self.assertEqual(len(prometheus), 3 * 2, prometheus)  # three gauges per rank
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())


if __name__ == "__main__":
    sc.skip_unless_server_installed()  # exit 77 (skipped) before any test runs
    unittest.main()
