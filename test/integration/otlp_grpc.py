"""otlp_grpc.py — the otlp output with protocol grpc against a real OTLP/gRPC
receiver (test/otlp_receiver with --grpc-port: @grpc/grpc-js serving
MetricsService/Export, every message decoded with the official OpenTelemetry
decoders): the data points it decoded equal the Prometheus scrape, gzip or
not, cumulative or delta, over plaintext HTTP/2 or mutual TLS; UNAVAILABLE,
and RESOURCE_EXHAUSTED with a RetryInfo (after its delay), are retried and
delivery completes; a partial_success is logged; RESOURCE_EXHAUSTED without
one, and INVALID_ARGUMENT, are refusals: dropped and never retried, counted,
logged once per process, and no credential shows in the output. Each call
carries timeout_ms as its gRPC deadline; a protocol the output does not
know, or a gRPC endpoint with a path, is a startup error.
"""
import os
import signal
import subprocess
import sys
import unittest

import otlp_common as oc
import simulate_harness
from tls_material import TlsMaterial

FAST = {"export_interval_ms": 200, "timeout_ms": 1000, "initial_backoff_ms": 100,
        "max_backoff_ms": 400}
SHUTDOWN_BUDGET_S = 2.0
SECRET_HEADER = "hdr-5e3c8a1f-secret"
SECRET_TOKEN = "tok-9b27d4c6-secret"


class OtlpGrpc(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = oc.make_tmp()
        self.receiver = oc.Receiver(grpc=True)
        self.runs = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        self.receiver.stop()

    def simulate(self, settings, *args):
        run = oc.Simulation(self.tmp, dict(FAST, protocol="grpc",
                                           endpoint=self.receiver.grpc_endpoint, **settings),
                            "--ranks", "1", "--request-rate", "100", "--duration", "3",
                            "--linger", "60", "--metrics-shutdown-timeout", str(SHUTDOWN_BUDGET_S),
                            "--metrics-reporter-queue-size", "262144", *args)
        self.runs.append(run)
        return run

    def finish(self, run):
        """Stops the producers; returns the scrape taken before the exit."""
        url = run.metrics_url()
        run.wait_for_line("producers stopped", timeout=oc.EXIT_TIMEOUT_S)
        exposition = oc.scrape(url)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        return exposition

    def grpc_requests(self):
        requests = self.receiver.state()["requests"]
        self.assertTrue(requests)
        self.assertTrue(all(r.get("protocol") == "grpc" for r in requests), requests)
        return requests

    def check_agreement(self, settings, encoding):
        run = self.simulate(dict(settings, headers={"x-tenant": "team-a"}))
        exposition = self.finish(run)
        oc.assert_nothing_dropped_by_the_host(self, run)
        delivered = {process: int(row[1]) for process, row in run.output_table().items()}
        simulate_harness.assert_clean_plugin_figures(self, run, "otlp", delivered, run.describe())
        state = self.receiver.state()
        oc.assert_otlp_equals_prometheus(self, state, exposition)
        requests = self.grpc_requests()
        # The message's size in the frame: gzip's, smaller, or the message's own.
        if encoding == "gzip":
            self.assertTrue(all(r["framed_bytes"] - 5 < r["bytes"] for r in requests), requests)
        else:
            self.assertTrue(all(r["framed_bytes"] - 5 == r["bytes"] for r in requests), requests)
        self.assertTrue(all(r["headers"].get("x-tenant") == "team-a" for r in requests), requests)
        self.assertTrue(all(r["status"] == 0 for r in requests), requests)
        self.assertEqual(len(state["resources"]), 3, state["resources"])
        self.assertFalse(run.plugin_lines("plugin 'otlp': export"), run.describe())
        return state

    def test_grpc_data_points_equal_the_scrape_gzip_cumulative(self):
        state = self.check_agreement({}, "gzip")
        self.assertEqual({point["type"] for point in state["series"]}, {"sum", "gauge", "histogram"})
        for point in state["series"]:
            if point["type"] == "sum":
                self.assertEqual(point["temporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE")

    def test_grpc_data_points_equal_the_scrape_uncompressed_delta(self):
        state = self.check_agreement({"compression": "none", "temporality": "delta"}, "identity")
        for point in state["series"]:
            if point["type"] in ("sum", "histogram"):
                self.assertEqual(point["temporality"], "AGGREGATION_TEMPORALITY_DELTA")

    def test_grpc_over_mutual_tls_data_points_equal_the_scrape(self):
        # TLS with a client certificate; HTTP/2 agreed through ALPN.
        self.receiver.stop()
        material = TlsMaterial(os.path.join(self.tmp, "tls"))
        self.receiver = oc.Receiver(tls=material, grpc=True)
        self.check_agreement({"tls": {"ca_file": material.path("ca.crt"),
                                      "cert_file": material.path("client.crt"),
                                      "key_file": material.path("client.key")}}, "gzip")

    def test_unavailable_is_retried_and_delivery_completes(self):
        self.receiver.control(responses=[{"grpc_status": 14, "grpc_message": "try later"}] * 3)
        run = self.simulate({})
        exposition = self.finish(run)
        oc.assert_nothing_dropped_by_the_host(self, run)
        oc.assert_otlp_equals_prometheus(self, self.receiver.state(), exposition)
        statuses = [r.get("status") for r in self.grpc_requests()]
        self.assertEqual(statuses[:3], [14] * 3, statuses)
        lines = run.plugin_lines("gRPC UNAVAILABLE (14): try later")
        self.assertTrue(lines, run.describe())
        self.assertTrue(all("retrying in" in line for line in lines), lines)
        self.assertFalse(run.plugin_lines("dropped a request"), run.describe())
        figures = run.plugin_figures("otlp")
        self.assertGreaterEqual(sum(counts["retries"] for counts in figures.values()), 3, figures)

    def test_a_partial_success_in_the_response_message_is_logged(self):
        self.receiver.control(responses=[{"rejected_data_points": 2,
                                          "error_message": "2 points had no name"}])
        run = self.simulate({})
        self.finish(run)
        lines = run.plugin_lines("accepted the export partly")
        self.assertEqual(len(lines), 1, run.describe())
        self.assertIn("2 data points rejected: 2 points had no name", lines[0])
        self.assertFalse(run.plugin_lines("retrying"), run.describe())  # status 0: not retried

    def test_resource_exhausted_with_retry_info_is_retried_after_its_delay(self):
        self.receiver.control(responses=[{"grpc_status": 8, "grpc_message": "slow down",
                                          "retry_delay_ms": 1000}] * 3)
        run = self.simulate({})
        exposition = self.finish(run)
        oc.assert_nothing_dropped_by_the_host(self, run)
        oc.assert_otlp_equals_prometheus(self, self.receiver.state(), exposition)
        lines = run.plugin_lines("gRPC RESOURCE_EXHAUSTED (8): slow down")
        self.assertTrue(lines, run.describe())
        # The delay is the receiver's second, not the 100 ms backoff.
        self.assertTrue(all("retrying in 1000 ms" in line for line in lines), lines)
        statuses = [r.get("status") for r in self.grpc_requests()]
        self.assertEqual(statuses[:3], [8] * 3, statuses)

    def test_resource_exhausted_without_retry_info_is_a_refusal(self):
        self.receiver.control(responses=[{"grpc_status": 8, "grpc_message": "over quota"}])
        run = self.simulate({})
        exposition = self.finish(run)
        oc.assert_otlp_equals_prometheus(self, self.receiver.state(), exposition)
        lines = run.plugin_lines("gRPC RESOURCE_EXHAUSTED (8): over quota")
        self.assertEqual(len(lines), 1, run.describe())
        self.assertIn("dropped a request of", lines[0])
        statuses = [r.get("status") for r in self.grpc_requests()]
        self.assertNotIn(8, statuses[1:], statuses)

    def test_a_refusal_is_dropped_counted_logged_once_and_quotes_no_secret(self):
        # Delta: a refused request is the only copy of its increments, so
        # the plugin counts them lost.
        token = self.tmp + "/token"
        with open(token, "w") as file:
            file.write(SECRET_TOKEN + "\n")
        self.receiver.control(responses=[{"grpc_status": 3, "grpc_message": "bad data"}] * 4)
        run = self.simulate({"temporality": "delta", "headers": {"x-api-key": SECRET_HEADER},
                             "bearer_token_file": token})
        run.wait_for_line("producers stopped", timeout=oc.EXIT_TIMEOUT_S)
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        requests = self.grpc_requests()
        statuses = [r.get("status") for r in requests]
        self.assertEqual(statuses[:4], [3] * 4, statuses)
        self.assertNotIn(3, statuses[4:], statuses)  # never retried
        # The credentials reached the receiver, and only the receiver.
        self.assertEqual(requests[0]["headers"].get("x-api-key"), SECRET_HEADER)
        self.assertEqual(requests[0]["headers"].get("authorization"), "Bearer " + SECRET_TOKEN)
        output = "\n".join(run.stdout_lines + run.stderr_lines)
        self.assertNotIn(SECRET_HEADER, output)
        self.assertNotIn(SECRET_TOKEN, output)
        # Logged: the first refusal of each process, then the rate limit
        # (10 s) holds the next ones back to the summary at close.
        refused = run.plugin_lines("gRPC INVALID_ARGUMENT (3): bad data")
        self.assertTrue(refused, run.describe())
        self.assertTrue(all("dropped a request of" in line for line in refused), refused)
        self.assertFalse([line for line in refused if "retrying" in line], refused)
        processes = {line.split("plugin 'otlp'")[0] for line in refused}
        self.assertEqual(len(refused), len(processes), refused)
        # Counted: what was refused is the plugin's "lost", in the status too.
        table = run.output_table()
        figures = run.plugin_figures("otlp")
        lost = 0
        for process, row in table.items():
            counts = figures[process]
            self.assertEqual(row[0], row[1], f"{process}: {row}")
            if counts["lost"]:
                self.assertEqual(row[4], simulate_harness.lost_events_status(counts),
                                 f"{process}: {row}")
            lost += counts["lost"]
        self.assertGreater(lost, 0, run.describe())
        # Lost events do not end the run "ok" (docs/operators.md).
        self.assertEqual(status, simulate_harness.lost_events_exit_status(figures),
                         run.describe())
        self.assertNotEqual(status, 0, run.describe())

    def test_the_plugins_listing_shows_the_protocol_setting(self):
        listing = subprocess.run([os.environ["TSM_BINARY"], "plugins",
                                  "--metrics-plugin-dir", oc.OTLP_DIR],
                                 capture_output=True, text=True, timeout=60)
        self.assertEqual(listing.returncode, 0, listing.stderr)
        self.assertIn("protocol", listing.stdout)
        self.assertIn('protocol choice ["http/protobuf","grpc"] default: "http/protobuf"',
                      " ".join(listing.stdout.split()))

    def test_each_call_carries_timeout_ms_as_its_grpc_deadline(self):
        # grpc-js reads grpc-timeout into the call's deadline: what was left
        # of it on arrival is at most timeout_ms, and more than FAST's 1000 ms.
        run = self.simulate({"timeout_ms": 7000})
        self.finish(run)
        left = [r["deadline_left_ms"] for r in self.grpc_requests()]
        self.assertTrue(all(r is not None and 1000 < r <= 7000 for r in left), left)

    def test_an_unknown_protocol_is_refused_at_startup_naming_the_key(self):
        run = oc.Simulation(self.tmp, {"protocol": "grpc-web",
                                       "endpoint": self.receiver.grpc_endpoint},
                            "--duration", "1")
        self.runs.append(run)
        self.assertEqual(run.wait(), 2, run.describe())
        errors = [line for line in run.stderr_text.splitlines() if "grpc-web" in line]
        self.assertEqual(len(errors), 1, run.describe())
        config = os.path.join(self.tmp, "metrics.json")
        for part in ("otlp", config, "protocol", "http/protobuf", "grpc"):
            self.assertIn(part, errors[0], run.describe())

    def test_a_grpc_endpoint_with_a_path_is_refused_at_startup(self):
        run = oc.Simulation(self.tmp, {"protocol": "grpc",
                                       "endpoint": self.receiver.grpc_endpoint + "/v1/metrics"},
                            "--duration", "1")
        self.runs.append(run)
        self.assertEqual(run.wait(), 2, run.describe())
        self.assertTrue(run.plugin_lines("without a path"), run.describe())


if __name__ == "__main__":
    oc.skip_unless_receiver_installed()
    GRPC_JS = os.path.join(os.path.dirname(oc.RECEIVER_JS), "node_modules", "@grpc", "grpc-js")
    if not os.path.isdir(GRPC_JS):
        print(f"skipped: {GRPC_JS} is missing (run npm ci in {os.path.dirname(oc.RECEIVER_JS)})")
        sys.exit(77)
    unittest.main()
