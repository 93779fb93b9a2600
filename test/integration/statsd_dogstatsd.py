"""statsd_dogstatsd.py — the dogstatsd flavour as a DogStatsD agent reads it:
a receiver of the test's own (UDP and unixgram) parses every datagram and
checks the grammar, the tags (the metric's labels), the datagram size bound,
and the weights (the agent counts int(1/rate) per distribution line): counter
totals, distribution counts and sums equal the Prometheus scrape; with
process_tags every line also carries process:<name> and node:<node>, the
host's names; the plugin reports every event delivered to it as sent.
"""
import math
import os
import signal
import socket
import unittest

import simulate_harness
import statsd_common as sc

# How long the receiver may take to read what was sent: a hang guard only.
AGREEMENT_TIMEOUT_S = 60


class DogstatsdAgreesWithPrometheus(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = sc.make_tmp()
        self.runs = []
        self.receiver = None

    def tearDown(self):
        for run in self.runs:
            run.kill()
        if self.receiver is not None:
            self.receiver.close()

    def check(self, receiver, settings, max_bytes, process_tags=False):
        self.receiver = receiver
        run = sc.Simulation(self.tmp, dict({"address": receiver.address, "flavour": "dogstatsd",
                                            "flush_interval_ms": 20}, **settings),
                            "--ranks", "2", "--request-rate", "10", "--duration", "2",
                            "--linger", "60", "--metrics-reporter-queue-size", "1048576")
        self.runs.append(run)
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=sc.EXIT_TIMEOUT_S)
        exposition = sc.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        rows = run.output_rows()
        for process, row in rows.items():
            self.assertEqual(row[2:], ["0", "0", "ok"], f"{process}: {row}")
        delivered = {process: int(row[1]) for process, row in rows.items()}
        simulate_harness.assert_clean_plugin_figures(self, run, "statsd", delivered,
                                                     run.describe())
        prometheus = sc.prometheus_samples(exposition)

        def compare():
            """(mismatches, got, identities, lines, errors) of what the
            receiver read so far."""
            lines, errors, _ = receiver.snapshot()
            got = {}
            identities = set()
            for name, value, kind, weight, tags in lines:
                tags = dict(tags)
                if process_tags:  # the host's names, not labels of the metric
                    identities.add((tags.pop("process", None), tags.pop("node", None)))
                series = "tokenspeed:" + name[len("tokenspeed."):]
                labels = frozenset(tags.items())
                if kind == "c":
                    key = (series, labels)
                    got[key] = got.get(key, 0) + value
                elif kind == "d":
                    for suffix, amount in (("_count", weight), ("_sum", value * weight)):
                        key = (series + suffix, labels)
                        got[key] = got.get(key, 0) + amount
            mismatches = []
            for (name, labels), value in prometheus.items():
                if name.endswith(("_total", "_count", "_sum")):
                    have = got.get((name, labels), 0)
                    if not math.isclose(have, value, rel_tol=1e-9, abs_tol=1e-9):
                        mismatches.append(f"{name} {dict(labels)}: /metrics {value}, "
                                          f"DogStatsD {have}")
            return mismatches, got, identities, lines, errors

        # The last flush was sent before close returned; the receiver's thread
        # reads it on its own time (later on a busy machine).
        last = []
        sc.eventually(lambda: last.append(compare()) or not last[-1][0], AGREEMENT_TIMEOUT_S,
                      interval=0.2)
        mismatches, got, identities, lines, errors = last[-1]
        self.assertEqual(errors, [])
        self.assertLessEqual(receiver.largest, max_bytes)
        for name, value, kind, weight, tags in lines:
            self.assertTrue(name.startswith("tokenspeed."), name)
            self.assertIn("model_name", tags)
            if not process_tags:
                self.assertNotIn("process", tags)
        self.assertEqual(mismatches, [])
        self.assertLessEqual(set(got) - set(prometheus), set())
        weights = [weight for _, _, kind, weight, _ in lines if kind == "d"]
        self.assertTrue(weights and max(weights) > 1, "no weighted observation was sent")
        if process_tags:
            # Every line names its process and node; every process that sent
            # lines (by its plugin's figures) is among them.
            senders = {process for process, counts in run.plugin_figures("statsd").items()
                       if counts["sent"] > 0}
            self.assertEqual(identities, {(process, socket.gethostname()) for process in senders})
        return lines

    def test_udp_datagrams_parse_carry_tags_and_weights_and_stay_within_the_bound(self):
        self.check(sc.DogstatsdReceiver(max_bytes=512), {"max_datagram_bytes": 512}, 512)

    def test_unixgram_datagrams_without_aggregation_sum_to_the_same_totals(self):
        path = os.path.join(self.tmp, "dsd.sock")
        lines = self.check(sc.DogstatsdReceiver(unix_path=path), {"aggregation": False}, 8192)
        self.assertIn("g", {kind for _, _, kind, _, _ in lines})

    def test_process_tags_name_the_process_and_node_of_every_line(self):
        self.check(sc.DogstatsdReceiver(), {"process_tags": True}, 8192, process_tags=True)


if __name__ == "__main__":
    unittest.main()
