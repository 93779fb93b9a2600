"""remote_write_agreement.py — after a `simulate` run with prometheus and
remote_write, PromQL on a real Prometheus 2.42 and a real VictoriaMetrics
1.79 returns exactly the scrape: `sum without (process)` of every counter
total, histogram bucket count, count and sum, and `max without (process)` of
each gauge (the engine's livemax gauges). Prometheus logs no out-of-order or
duplicate sample; every series of a stopped process ends in a stale marker.
The series carry the host's process names (process label) and its node (node
label); the plugin reports every event delivered to it as sent.
"""
import signal
import unittest

import remote_write_common as rw
import simulate_harness


class AgreementTest(rw.ReceiverRuns):
    """Mixed into one TestCase per receiver."""

    def run_to_the_end(self, settings):
        run = self.simulate(settings, "--ranks", "2", "--request-rate", "200", "--duration", "2",
                            "--linger", "60", "--metrics-reporter-queue-size", "1048576")
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=rw.EXIT_TIMEOUT_S)
        exposition = rw.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        table = run.output_table()
        self.assertEqual(len(table), 4, run.describe())
        for process, row in table.items():
            self.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}")
        self.assertFalse(run.plugin_lines("plugin 'remote_write'"), run.describe())
        # The plugin's own figures: every event delivered to it was sent, and
        # /metrics showed them per process before the exit.
        delivered = {process: int(row[1]) for process, row in table.items()}
        simulate_harness.assert_clean_plugin_figures(self, run, "remote_write", delivered,
                                                     run.describe())
        simulate_harness.assert_plugin_series_for_every_process(
            self, exposition, "remote_write", run.plugin_figures("remote_write"), run.describe())
        self.table_processes = set(table)
        return exposition

    def assert_agrees(self, exposition):
        return rw.assert_promql_equals_scrape(self, self.server, exposition)

    def test_counter_totals_and_histogram_buckets_counts_and_sums_equal_the_scrape(self):
        exposition = self.run_to_the_end({})
        pushed = self.assert_agrees(exposition)
        names = {name for name, _ in pushed}
        self.assertIn("tokenspeed:generation_tokens_total", names)  # _total kept
        self.assertIn("tokenspeed:time_to_first_token_seconds_bucket", names)
        # Four producer processes, each its own process label value: the
        # process names of the summary table; the node label names the node.
        processes = self.server.label_values("process")
        self.assertEqual(sorted(processes), sorted(self.table_processes), processes)
        self.assertEqual(self.server.label_values("node"), [rw.NODE])
        for labels in self.server.series('{__name__=~"tokenspeed:.+"}'):
            self.assertEqual(labels.get("node"), rw.NODE, labels)

    def test_small_requests_split_the_samples_and_still_sum_to_the_scrape(self):
        exposition = self.run_to_the_end({"max_samples_per_request": 7})
        self.assert_agrees(exposition)

    def test_each_gauge_last_value_equals_the_scrape(self):
        # One scheduler iteration in 60 s: the gauges are set once and stay,
        # so /metrics and the pushed values can be compared while the
        # producers run (live gauges leave /metrics when their process stops).
        run = self.simulate({}, "--ranks", "2", "--iteration-ms", "60000")
        url = run.metrics_url()
        gauges = ("tokenspeed:num_requests_running", "tokenspeed:num_requests_waiting",
                  "tokenspeed:kv_cache_usage_perc")

        def compare():
            scraped = {key: value for key, value in rw.prometheus_series(rw.scrape(url)).items()
                       if key[0] in gauges}
            pushed = rw.promql_series(self.server, "max", gauges, inner="{name}")
            return (bool(scraped) and set(scraped) <= set(pushed) and
                    all(pushed[key] == value for key, value in scraped.items()),
                    scraped, pushed)

        last = []
        rw.eventually(lambda: last.append(compare()) or last[-1][0], rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        agreed, scraped, pushed = last[-1]
        self.assertTrue(agreed, f"/metrics {scraped}\nPromQL {pushed}\n{run.describe()}")
        self.assertEqual(len(scraped), 3 * 2, scraped)  # three gauges per rank
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())

    def test_every_series_ends_with_a_stale_marker_when_its_process_stops(self):
        exposition = self.run_to_the_end({})
        self.assert_agrees(exposition)
        # Within the 5 minute lookback, only a stale marker hides a series
        # (once the receiver shows the markers it took).
        engine_series = '{__name__=~"tokenspeed:.+"}'
        rw.eventually(lambda: not self.server.query(engine_series), rw.AGREEMENT_TIMEOUT_S,
                      interval=0.5)
        self.assertEqual(self.server.query(engine_series), [])


class PrometheusAgreement(rw.OnPrometheus, AgreementTest, unittest.TestCase):
    pass


class VictoriaMetricsAgreement(rw.OnVictoriaMetrics, AgreementTest, unittest.TestCase):
    pass


if __name__ == "__main__":
    rw.main()
