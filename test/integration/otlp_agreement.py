"""otlp_agreement.py — after a `simulate` run with prometheus and otlp, the
data points the official OpenTelemetry decoders read from the otlp requests
equal the Prometheus scrape: every counter total, histogram bucket count,
count and sum (weights included) summed over the producers' resources, and
each gauge's last value. With --native-histograms the histograms are
ExponentialHistograms whose buckets, merged over the resources (and over the
delta windows), equal the scrape's `le` lines at every boundary both scales
share. Each resource is named after the host's node and process
(service.instance.id "<node>/<process>"); the plugin reports every event
delivered to it as sent.
"""
import signal
import socket
import unittest

import otlp_common as oc
import simulate_harness


class OtlpAgreesWithPrometheus(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = oc.make_tmp()
        self.receiver = oc.Receiver()
        self.runs = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        self.receiver.stop()

    def simulate(self, settings, *args):
        run = oc.Simulation(self.tmp, dict({"endpoint": self.receiver.url + "/v1/metrics",
                                            "export_interval_ms": 200}, **settings), *args)
        self.runs.append(run)
        return run

    def check_totals(self, settings, node=None, native=False):
        """node: --metrics-node-name (None: the host name names the node);
        native: the histograms with exponential buckets. The scrape is taken
        once every producer has ended (the launcher lingering): final, as the
        producers' last exports are."""
        run = self.simulate(settings, "--ranks", "2", "--request-rate", "200", "--duration", "2",
                            "--linger", "60", "--metrics-reporter-queue-size", "1048576",
                            *(["--metrics-node-name", node] if node else []),
                            *(["--native-histograms"] if native else []))
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=oc.EXIT_TIMEOUT_S)
        exposition = oc.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        # Nothing overflowed, nothing failed: nothing may be missing.
        table = run.output_table()
        self.assertEqual(len(table), 4, run.describe())
        for process, row in table.items():
            self.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}")
        # The plugin's own figures: every event delivered to it was sent, and
        # /metrics showed them per process before the exit.
        delivered = {process: int(row[1]) for process, row in table.items()}
        simulate_harness.assert_clean_plugin_figures(self, run, "otlp", delivered, run.describe())
        simulate_harness.assert_plugin_series_for_every_process(
            self, exposition, "otlp", run.plugin_figures("otlp"), run.describe())
        state = self.receiver.state()
        # Each producer process is its own resource, named "<node>/<process>"
        # after the host's names, with the producer's pid.
        node = node or socket.gethostname()
        pids = run.process_pids("otlp")
        self.assertEqual(set(state["resources"]), {f"{node}/{process}" for process in table},
                         state["resources"])
        for process, pid in pids.items():
            resource = state["resources"][f"{node}/{process}"]
            self.assertEqual(resource["host.name"], node, resource)
            self.assertEqual(int(resource["process.pid"]), pid, resource)
        # {(name, labels): (OTLP scale, /metrics scale)} of the exponential series.
        self.compared = oc.assert_otlp_equals_prometheus(self, state, exposition)
        return state

    def assert_native_histograms_compared(self, state, temporality):
        """Every histogram of the run came as an ExponentialHistogram of the
        temporality, and /metrics had buckets to compare with."""
        self.assertEqual({point["type"] for point in state["series"]},
                         {"sum", "gauge", "exponential_histogram"})
        for point in state["series"]:
            if point["type"] == "exponential_histogram":
                self.assertEqual(point["temporality"], temporality, point)
        self.assertEqual({name for name, _ in self.compared}, {
            "tokenspeed:iteration_tokens_total", "tokenspeed:time_to_first_token_seconds",
            "tokenspeed:request_time_per_output_token_seconds",
            "tokenspeed:inter_token_latency_seconds", "tokenspeed:e2e_request_latency_seconds",
            "tokenspeed:func_latency_seconds"})

    def test_counter_totals_and_histogram_buckets_counts_and_sums_equal_the_scrape(self):
        state = self.check_totals({})
        by_type = {point["type"] for point in state["series"]}
        self.assertEqual(by_type, {"sum", "gauge", "histogram"})
        for point in state["series"]:
            if point["type"] == "sum":
                self.assertTrue(point["monotonic"])
                self.assertEqual(point["temporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE")
                self.assertFalse(point["name"].endswith("_total"), point["name"])
        units = {point["name"]: point["unit"] for point in state["series"]}
        self.assertEqual(units["tokenspeed:time_to_first_token_seconds"], "s")
        self.assertEqual(units["tokenspeed:generation_tokens"], "{token}")
        self.assertTrue(all(r["encoding"] == "gzip" for r in state["requests"]))

    def test_delta_temporality_without_compression_sums_to_the_same_totals(self):
        state = self.check_totals({"temporality": "delta", "compression": "none"},
                                  node="gpu-node-7")
        self.assertTrue(all(r["encoding"] == "identity" for r in state["requests"]))
        for point in state["series"]:
            if point["type"] in ("sum", "histogram"):
                self.assertEqual(point["temporality"], "AGGREGATION_TEMPORALITY_DELTA")

    def test_small_requests_split_the_data_points_and_still_sum_to_the_scrape(self):
        state = self.check_totals({"max_data_points_per_request": 3})
        self.assertTrue(all(r.get("points", 0) <= 3 for r in state["requests"]), state["requests"])

    def test_native_histograms_are_exponential_histograms_whose_buckets_equal_the_scrape(self):
        state = self.check_totals({}, native=True)
        self.assert_native_histograms_compared(state, "AGGREGATION_TEMPORALITY_CUMULATIVE")
        # Latencies and token counts spread over many buckets: the scale is
        # below the family's maximum (20) and there are boundaries to compare.
        self.assertTrue(any(otlp < 20 for otlp, _ in self.compared.values()), self.compared)

    def test_native_histograms_in_small_delta_requests_sum_to_the_scrape(self):
        # Small requests: a delta export every few changed series, so the
        # windows of a series are many and merge at different scales.
        state = self.check_totals({"temporality": "delta", "max_data_points_per_request": 3},
                                  native=True)
        self.assert_native_histograms_compared(state, "AGGREGATION_TEMPORALITY_DELTA")
        self.assertTrue(all(r.get("points", 0) <= 3 for r in state["requests"]), state["requests"])
        windows = [len(point["windows"]) for point in state["series"]
                   if point["type"] == "exponential_histogram"]
        self.assertGreater(max(windows), 1, windows)

    def test_each_gauge_last_value_equals_the_scrape(self):
        # One scheduler iteration in 30 to 90 s: the gauges are set once and
        # stay, so /metrics and the last exported values can be compared while
        # the producers run (their live gauges leave /metrics when they stop).
        run = self.simulate({}, "--ranks", "2", "--iteration-ms", "60000")
        url = run.metrics_url()

        def gauges_agree():
            prometheus = {(name, labels): value
                          for (name, labels), value in oc.prometheus_series(oc.scrape(url)).items()
                          if name in ("tokenspeed:num_requests_running",
                                      "tokenspeed:num_requests_waiting",
                                      "tokenspeed:kv_cache_usage_perc")}
            otlp = oc.otlp_gauges(self.receiver.state())
            same = bool(prometheus) and set(prometheus) <= set(otlp) and \
                all(otlp[key] == value for key, value in prometheus.items())
            return same, prometheus, otlp

        last = []

        def agreed():
            last.append(gauges_agree())
            return last[-1][0]

        oc.eventually(agreed, 60)
        agreed, prometheus, otlp = last[-1]
        self.assertTrue(agreed, f"/metrics {prometheus}\nOTLP {otlp}\n{run.describe()}")
        self.assertEqual(len(prometheus), 3 * 2, prometheus)  # three gauges per rank
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())


if __name__ == "__main__":
    oc.skip_unless_receiver_installed()
    unittest.main()
