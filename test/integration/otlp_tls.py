"""otlp_tls.py — the otlp output over HTTPS to the Node OTLP receiver serving
the server certificate of tls_material.py and requiring a client
certificate its CA signed: the agreement tests of otlp_agreement.py pass
with the CA, the client certificate and its key in the output's settings;
without a client certificate, or with one of a CA nobody trusts, no request
gets through and each failure is logged and retried; tls.server_name is the
name the receiver's certificate is checked against; a 401 or 403 is
dropped, counted and logged once, never retried; a bearer token file and
header files are read again at every request and never logged.
"""
import os
import signal
import unittest

import otlp_common as oc
import otlp_agreement
from tls_material import TlsMaterial, write_secret

TOKEN = "token-one-3f9a"
ROTATED_TOKEN = "token-two-8c1e"
API_KEY = "api-key-51d0"
FAILED = "plugin 'otlp': export to https://"


class MutualTlsMixin:
    def setUp(self):
        self.tmp = oc.make_tmp()
        self.material = TlsMaterial(os.path.join(self.tmp, "tls"))
        self.receiver = oc.Receiver(tls=self.material)
        self.runs = []

    def tls(self, client="client", **more):
        tls = {"ca_file": self.material.path("ca.crt")}
        if client:
            tls.update(cert_file=self.material.path(client + ".crt"),
                       key_file=self.material.path(client + ".key"))
        tls.update(more)
        return tls


class MutualTlsAgreement(MutualTlsMixin, otlp_agreement.OtlpAgreesWithPrometheus):
    """The agreement tests of otlp_agreement.py, over HTTPS with a client
    certificate."""

    def simulate(self, settings, *args):
        return super().simulate(dict({"tls": self.tls()}, **settings), *args)


class MutualTlsFaults(MutualTlsMixin, unittest.TestCase):
    maxDiff = None

    def tearDown(self):
        for run in self.runs:
            run.kill()
        self.receiver.stop()

    def simulate(self, settings, *args):
        run = oc.Simulation(self.tmp, dict({"endpoint": self.receiver.url + "/v1/metrics",
                                            "export_interval_ms": 200, "initial_backoff_ms": 100,
                                            "max_backoff_ms": 400}, **settings),
                            "--ranks", "1", "--request-rate", "100",
                            "--metrics-shutdown-timeout", "1", *args)
        self.runs.append(run)
        return run

    def resources(self):
        return len(self.receiver.state()["resources"])

    def assert_refused(self, tls, *words):
        run = self.simulate({"tls": tls})
        url = run.metrics_url()
        self.assertTrue(oc.eventually(lambda: len(run.plugin_lines(FAILED)) >= 3, 60),
                        run.describe())
        lines = run.plugin_lines(FAILED)
        self.assertTrue(all("retrying in" in line for line in lines), lines)
        for word in words:
            self.assertTrue(any(word in line for line in lines), lines)
        oc.simulate_harness.assert_engine_kept_going(self, url, 0.5, run.describe())
        self.assertEqual(self.receiver.state()["requests"], [])
        run.process.send_signal(signal.SIGTERM)
        # What could not be delivered makes close fail: simulate exits 3.
        self.assertEqual(run.wait(), 3, run.describe())

    def test_without_a_client_certificate_delivery_fails_is_logged_and_retried(self):
        self.assert_refused(self.tls(client=None))

    def test_a_client_certificate_of_a_ca_nobody_trusts_is_refused(self):
        self.assert_refused(self.tls(client="stranger"))

    def test_a_server_name_the_certificate_does_not_carry_is_refused(self):
        self.assert_refused(self.tls(server_name="elsewhere.test"), "elsewhere.test")

    def test_the_server_name_is_what_the_certificate_is_checked_against(self):
        # The URL says 127.0.0.1; the certificate also carries localhost.
        run = self.simulate({"tls": self.tls(server_name="localhost")})
        self.assertTrue(oc.eventually(lambda: self.resources() >= 3, 60), run.describe())
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        host = {r["headers"].get("host") for r in self.receiver.state()["requests"]}
        self.assertEqual(host, {f"127.0.0.1:{self.receiver.port}"})

    def test_a_401_or_403_is_dropped_counted_and_logged_once_not_retried(self):
        self.receiver.control(responses=[{"status": 401}, {"status": 403}] * 3)
        run = self.simulate({"tls": self.tls()})
        self.assertTrue(oc.eventually(lambda: len(self.receiver.state()["requests"]) >= 6, 60),
                        run.describe())
        self.assertTrue(oc.eventually(lambda: self.resources() >= 3, 60), run.describe())
        refused = [line for line in run.plugin_lines("plugin 'otlp'")
                   if "HTTP 401" in line or "HTTP 403" in line]
        self.assertTrue(refused, run.describe())
        # Rate-limited: the first of each process within the 10 s interval.
        self.assertLessEqual(len(refused), 3, run.describe())
        for line in refused:
            self.assertIn("dropped a request of", line)
            self.assertIn("data points dropped in total", line)
        self.assertFalse(run.plugin_lines("retrying"), run.describe())
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())

    def test_bearer_token_and_header_files_are_read_at_every_request_and_never_logged(self):
        token_file = os.path.join(self.tmp, "token")
        key_file = os.path.join(self.tmp, "api-key")
        write_secret(token_file, TOKEN)
        write_secret(key_file, API_KEY)
        run = self.simulate({"tls": self.tls(), "bearer_token_file": token_file,
                             "header_files": {"X-Api-Key": key_file}})

        def seen(token):
            return [r for r in self.receiver.state()["requests"]
                    if r["headers"].get("authorization") == "Bearer " + token]

        self.assertTrue(oc.eventually(lambda: seen(TOKEN), 60), run.describe())
        self.assertTrue(all(r["headers"].get("x-api-key") == API_KEY
                            for r in self.receiver.state()["requests"]))
        write_secret(token_file, ROTATED_TOKEN)
        self.assertTrue(oc.eventually(lambda: len(seen(ROTATED_TOKEN)) >= 3, 60), run.describe())
        # Gone at runtime: the request is not sent, logged and retried.
        os.unlink(key_file)
        gone = "'header_files': 'X-Api-Key': cannot read " + key_file
        self.assertTrue(oc.eventually(lambda: run.plugin_lines(gone), 60), run.describe())
        self.assertTrue(all("retrying in" in line for line in run.plugin_lines(gone)))
        write_secret(key_file, API_KEY)
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())
        described = run.describe()
        for secret in (TOKEN, ROTATED_TOKEN, API_KEY):
            self.assertNotIn(secret, described)


if __name__ == "__main__":
    oc.skip_unless_receiver_installed()
    unittest.main()
