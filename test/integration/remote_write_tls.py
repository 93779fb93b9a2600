"""remote_write_tls.py — the remote_write output against a real Prometheus
2.42 whose web endpoint (its remote-write receiver included) sits behind its
own --web.config.file, with TLS and basic auth: PromQL over what was pushed
equals the scrape, as in remote_write_agreement.py, with the CA, the user and
a password file in the output's settings; a wrong password is answered 401,
logged once per process (rate-limited), counted as dropped and never
retried, and the password file, read again at every request, can be fixed
without a restart; a password file gone fails each request before it is
sent, logged and retried; a certificate no CA vouches for is refused. Certificates and the bcrypt hash come from
tls_material.py (openssl, htpasswd).
"""
import os
import signal
import unittest

import remote_write_common as rw
from remote_write_agreement import AgreementTest
from tls_material import TlsMaterial, write_secret

USER = "tokenspeed"
PASSWORD = "s3cret-pa55word"
WRONG_PASSWORD = "not-the-password"
REJECTED = "HTTP 401"


class TlsServerMixin:
    """One TLS material and password file per test; the server behind TLS
    and basic auth; every simulate given the CA, the user and the file."""

    def setUp(self):
        rw.skip_unless(self, rw.PROMETHEUS, "prometheus")
        self.tmp = rw.make_tmp()
        self.material = TlsMaterial(os.path.join(self.tmp, "tls"))
        self.password_file = os.path.join(self.tmp, "password")
        write_secret(self.password_file, PASSWORD)
        self.server = rw.TlsPrometheus(self.tmp, self.material, USER, PASSWORD)
        self.runs = []

    def tls_settings(self):
        return {"tls": {"ca_file": self.material.path("ca.crt")},
                "basic_auth": {"username": USER, "password_file": self.password_file}}

    def simulate(self, settings, *args):
        return super().simulate(dict(self.tls_settings(), **settings), *args)


class TlsBasicAuthAgreement(TlsServerMixin, AgreementTest, unittest.TestCase):
    """The agreement tests of remote_write_agreement.py, over TLS with basic auth."""

    def tearDown(self):
        super().tearDown()
        self.assertEqual(self.server.sample_errors(), [], "\n".join(self.server.log))


class TlsCredentials(TlsServerMixin, unittest.TestCase):
    maxDiff = None

    def tearDown(self):
        for run in self.runs:
            run.kill()
        self.server.stop()

    def simulate(self, settings, *args):
        run = rw.Simulation(self.tmp, dict(self.tls_settings(), url=self.server.write_url,
                                           push_interval_ms=200, initial_backoff_ms=100,
                                           max_backoff_ms=400, **settings),
                            "--ranks", "1", "--request-rate", "100",
                            "--metrics-reporter-queue-size", "262144", *args)
        self.runs.append(run)
        return run

    def pushed_processes(self):
        try:
            return len(self.server.label_values("process"))
        except OSError:
            return 0

    def stop(self, run):
        """SIGTERM; close delivers the last state: exit status 0."""
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), 0, run.describe())

    def test_a_wrong_password_is_logged_once_counted_as_dropped_not_retried_and_can_be_fixed(self):
        write_secret(self.password_file, WRONG_PASSWORD)
        run = self.simulate({})
        url = run.metrics_url()
        # Every producer (launcher, scheduler, frontend) is refused.
        self.assertTrue(rw.eventually(lambda: len(run.plugin_lines(REJECTED)) >= 3, 60),
                        run.describe())
        rw.simulate_harness.assert_engine_kept_going(self, url, 1.0, run.describe())
        rejected = run.plugin_lines(REJECTED)
        # Rate-limited: the first refusal of each process within the 10 s interval.
        self.assertLessEqual(len(rejected), 3, run.describe())
        for line in rejected:
            self.assertIn("dropped a request of", line)
            self.assertIn("dropped in total", line)
        self.assertFalse(run.plugin_lines("retrying"), run.describe())
        self.assertEqual(self.pushed_processes(), 0)

        # The file is read again at every request: fixed, delivery starts.
        write_secret(self.password_file, PASSWORD)
        self.assertTrue(rw.eventually(lambda: self.pushed_processes() >= 3, 60), run.describe())
        self.stop(run)
        describe = run.describe()
        for secret in (PASSWORD, WRONG_PASSWORD):
            self.assertNotIn(secret, describe)

    def test_a_password_file_that_disappears_fails_requests_which_are_retried(self):
        run = self.simulate({})
        self.assertTrue(rw.eventually(lambda: self.pushed_processes() >= 3, 60), run.describe())
        os.unlink(self.password_file)
        failed = "'basic_auth.password_file': cannot read " + self.password_file
        self.assertTrue(rw.eventually(lambda: run.plugin_lines(failed), 60), run.describe())
        self.assertTrue(all("retrying in" in line for line in run.plugin_lines(failed)),
                        run.describe())
        self.assertFalse(run.plugin_lines("dropped a request"), run.describe())
        # Back before close: the last state is delivered.
        write_secret(self.password_file, PASSWORD)
        self.stop(run)
        self.assertNotIn(PASSWORD, run.describe())

    def test_without_the_ca_the_receivers_certificate_is_refused_and_retried(self):
        run = self.simulate({"tls": {}}, "--metrics-shutdown-timeout", "1")
        self.assertTrue(rw.eventually(lambda: run.plugin_lines("certificate"), 60), run.describe())
        self.assertTrue(all("retrying in" in line for line in run.plugin_lines("certificate")),
                        run.describe())
        self.assertEqual(self.pushed_processes(), 0)
        run.process.send_signal(signal.SIGTERM)
        run.wait()


if __name__ == "__main__":
    rw.main()
