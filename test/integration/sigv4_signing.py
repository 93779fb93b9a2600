"""sigv4_signing.py — the remote_write and otlp outputs signing their
requests with AWS Signature V4 (the kit's sigv4 settings) into
test/sigv4_verifier, a
local receiver that signs every request again with npm aws4, an independent
signer, from the known test credentials and answers 403 on any difference,
as Amazon Managed Service for Prometheus does (no network: 127.0.0.1 only).

- credentials from files with a session token: every push of every process
  is accepted, the token sent and signed with the body's headers;
- a wrong secret: every push is refused 403, logged (rate-limited), counted
  as dropped and lost in the plugin's figures, never retried; the secret
  file, read again at every request, can be fixed without a restart;
- credentials from the AWS_* environment, and from a profile of a shared
  credentials file named by AWS_SHARED_CREDENTIALS_FILE and AWS_PROFILE;
- the otlp output's exports, signed the same way, are accepted too, over
  HTTP and over gRPC (HTTP/2, where :authority is the signed host); a gRPC
  call with a wrong secret is refused UNAUTHENTICATED, never retried;
- no secret (key, token) in any line the run printed;
- with sigv4.role_arn, the base credentials sign an STS AssumeRole call to
  the verifier's STS port (checked with aws4 for the service sts), and only
  the temporary credentials it issued, with their session token, sign the
  pushes and exports; short-lived ones are renewed before they expire; an
  STS refusal is a logged (rate-limited), retried failure, and delivery
  resumes once STS allows the call; a role_arn that is not a role's ARN
  fails startup (exit 2, one line naming the reporter, the file and the
  key).

Environment: remote_write_common's, and TSM_NODE, TSM_SIGV4_VERIFIER
(test/sigv4_verifier/verifier.js, its node_modules beside it), TSM_OTLP_DIR
(the folder holding otlp.so; '' skips the otlp test).
"""
import json
import os
import signal
import subprocess
import sys
import unittest
import urllib.request

import remote_write_common as rw
from tls_material import write_secret

NODE = os.environ.get("TSM_NODE", "node")
OTLP_DIR = os.environ.get("TSM_OTLP_DIR", "")
VERIFIER_JS = os.environ["TSM_SIGV4_VERIFIER"]

KEY_ID = "AKIDTOKENSPEEDTEST"
SECRET = "sk-7f3c9a1e5b2d8f4a6c0e9b7d3a1f5c8e2b4d6a0"
WRONG_SECRET = "sk-0000wrongwrongwrongwrongwrongwrong0000"
TOKEN = "tok-FwoGZXIvYXdzEJr//////////wEaDOp9Jf3sigv4testtoken"
REGION = "eu-west-1"
ROLE_ARN = "arn:aws:iam::123456789012:role/tokenspeed-metrics-writer"
# The verifier's issued secrets and tokens start with these (verifier.js).
ISSUED_SECRET_MARK = "TMPSECRET"
ISSUED_TOKEN_MARK = "TMPTOKEN"
WRITE_PATH = "/workspaces/ws-0123abcd/api/v1/remote_write"
# The headers a remote-write push signs: the body's, the protocol's, AWS's.
SIGNED = ["content-encoding", "content-type", "host", "x-amz-content-sha256", "x-amz-date",
          "x-prometheus-remote-write-version"]
PROCESSES = 3  # --ranks 1: the launcher, scheduler-0 and the frontend


def skip_unless_verifier_installed():
    """Exits 77 (meson: skipped) without node or the verifier's package."""
    modules = os.path.join(os.path.dirname(VERIFIER_JS), "node_modules", "aws4")
    if not os.path.isdir(modules):
        print(f"skipped: {modules} is missing (run npm ci in {os.path.dirname(VERIFIER_JS)})")
        sys.exit(77)


class Verifier:
    """The Node SigV4 verifier on an ephemeral port, knowing one key (and a
    session token, when given); with role ({"arn", "expiry_seconds",
    "refuse"}), also STS, whose temporary credentials alone it then takes."""

    def __init__(self, tmp, session_token=None, role=None):
        config = os.path.join(tmp, "verifier.json")
        write_secret(config, json.dumps({
            "access_key_id": KEY_ID, "secret_access_key": SECRET,
            "session_token": session_token, "region": REGION, "service": "aps", "role": role}))
        self.process = subprocess.Popen([NODE, VERIFIER_JS, "--config", config],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            self.process.kill()
            raise AssertionError(f"verifier did not start: {line!r} {self.process.stderr.read()}")
        self.port, self.grpc_port, self.sts_port = (int(word) for word in line.split()[1:4])

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    @property
    def grpc_endpoint(self):
        """The cleartext HTTP/2 port, answering as a gRPC server."""
        return f"http://127.0.0.1:{self.grpc_port}"

    @property
    def write_url(self):
        return self.url + WRITE_PATH

    @property
    def sts_url(self):
        return f"http://127.0.0.1:{self.sts_port}/"

    def state(self):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/state", timeout=10) as answer:
            return json.loads(answer.read())

    def requests(self):
        return self.state()["requests"]

    def sts_calls(self):
        """One entry per AssumeRole call: status, reason, role_arn, session_name,
        duration_seconds, issued_key_id."""
        return self.state()["sts"]

    def refuse_assume_role(self, refuse):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/control", method="POST",
                                         data=json.dumps({"refuse": refuse}).encode())
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.loads(answer.read())["refuse"]

    def count(self, status):
        return sum(1 for request in self.requests() if request["status"] == status)

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()


class SigV4RemoteWrite(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = rw.make_tmp()
        self.runs = []
        self.verifier = None

    def tearDown(self):
        for run in self.runs:
            run.kill()
        if self.verifier is not None:
            self.verifier.stop()

    def secret_file(self, name, text):
        path = os.path.join(self.tmp, name)
        write_secret(path, text)
        return path

    def environment(self, **aws):
        """This process's environment without any AWS_* variable, plus aws."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env["HOME"] = self.tmp  # no ~/.aws/credentials of the machine's
        env.update(aws)
        return env

    def simulate(self, sigv4, env=None):
        run = rw.Simulation(self.tmp, {"url": self.verifier.write_url, "push_interval_ms": 200,
                                       "initial_backoff_ms": 100, "max_backoff_ms": 400,
                                       "sigv4": dict(region=REGION, **sigv4)},
                            "--ranks", "1", "--request-rate", "100",
                            env=env if env is not None else self.environment())
        self.runs.append(run)
        return run

    def stop(self, run, status=0):
        """SIGTERM; close delivers the last state: exit status 0 (3 when an
        output lost every event and sent none)."""
        run.process.send_signal(signal.SIGTERM)
        self.assertEqual(run.wait(), status, run.describe())

    def assert_no_secret_printed(self, run):
        printed = "\n".join(run.stdout_lines + run.stderr_lines)
        for secret in (SECRET, WRONG_SECRET, TOKEN, ISSUED_SECRET_MARK, ISSUED_TOKEN_MARK):
            self.assertNotIn(secret, printed)

    def assert_every_push_accepted(self, run, token):
        """Pushes of every process accepted, none refused; each signed over
        SIGNED (and the token); every event sent, none lost."""
        expected = ";".join(sorted(SIGNED + (["x-amz-security-token"] if token else [])))
        for request in self.accepted_requests(run):
            self.assertEqual(request["path"], WRITE_PATH)
            self.assertEqual(request["signed_headers"], expected)
            self.assertEqual(request["token"], token)
            self.assertEqual(request["content_encoding"], "snappy")
        self.assert_every_event_sent(run, "remote_write")

    def accepted_requests(self, run, until=None):
        """Waits for two accepted requests per process (or until(), when
        given), stops the run, and returns the verifier's requests, none of
        them refused."""
        until = until or (lambda: self.verifier.count(200) >= 2 * PROCESSES)
        self.assertTrue(rw.eventually(until, 60), run.describe())
        self.stop(run)
        requests = self.verifier.requests()
        self.assertEqual([r for r in requests if r["status"] != 200], [], run.describe())
        return requests

    def assert_every_event_sent(self, run, output):
        """Every process's plugin sent, lost nothing, retried nothing; no
        secret printed."""
        figures = run.plugin_figures(output)
        self.assertEqual(len(figures), PROCESSES, run.describe())
        for process, counts in figures.items():
            self.assertGreater(counts["sent"], 0, process)
            self.assertEqual((counts["lost"], counts["retries"]), (0, 0), f"{process}: {counts}")
        self.assert_no_secret_printed(run)

    def test_signed_pushes_with_credentials_from_files_and_a_session_token_are_accepted(self):
        self.verifier = Verifier(self.tmp, session_token=TOKEN)
        run = self.simulate({"access_key_id_file": self.secret_file("id", KEY_ID),
                             "secret_access_key_file": self.secret_file("secret", SECRET),
                             "session_token_file": self.secret_file("token", TOKEN)})
        self.assert_every_push_accepted(run, token=True)

    def test_a_wrong_secret_is_refused_logged_counted_as_lost_never_retried_and_can_be_fixed(self):
        self.verifier = Verifier(self.tmp)
        secret = self.secret_file("secret", WRONG_SECRET)
        run = self.simulate({"access_key_id_file": self.secret_file("id", KEY_ID),
                             "secret_access_key_file": secret})
        # Every producer (launcher, scheduler, frontend) is refused.
        self.assertTrue(rw.eventually(lambda: len(run.plugin_lines("HTTP 403")) >= PROCESSES, 60),
                        run.describe())
        rw.simulate_harness.assert_engine_kept_going(self, run.metrics_url(), 1.0, run.describe())
        refused = run.plugin_lines("HTTP 403")
        # Rate-limited: the first refusal of each process within the 10 s interval.
        self.assertLessEqual(len(refused), PROCESSES, run.describe())
        for line in refused:
            self.assertIn("dropped a request of", line)
            self.assertIn("SigV4 verification failed: signature mismatch", line)
        self.assertFalse(run.plugin_lines("retrying"), run.describe())
        self.assertEqual(self.verifier.count(200), 0)
        self.assertEqual({r["reason"] for r in self.verifier.requests()}, {"signature mismatch"})

        # The file is read again at every request: fixed, pushes are accepted.
        write_secret(secret, SECRET)
        self.assertTrue(rw.eventually(lambda: self.verifier.count(200) >= PROCESSES, 60),
                        run.describe())
        self.stop(run)
        self.assert_no_secret_printed(run)

    def test_a_wrong_secret_throughout_loses_every_event_in_the_plugins_figures(self):
        self.verifier = Verifier(self.tmp)
        run = self.simulate({"access_key_id_file": self.secret_file("id", KEY_ID),
                             "secret_access_key_file": self.secret_file("secret", WRONG_SECRET)})
        self.assertTrue(rw.eventually(lambda: self.verifier.count(403) >= 2 * PROCESSES, 60),
                        run.describe())
        run.process.send_signal(signal.SIGTERM)
        status = run.wait()
        self.assertEqual(self.verifier.count(200), 0)
        figures = run.plugin_figures("remote_write")
        self.assertEqual(len(figures), PROCESSES, run.describe())
        for process, counts in figures.items():
            # Nothing reached the receiver; nothing is silently gone.
            self.assertEqual((counts["sent"], counts["retries"], counts["pending"]), (0, 0, 0),
                             f"{process}: {counts}\n{run.describe()}")
            self.assertGreater(counts["lost"], 0, f"{process}: {counts}\n{run.describe()}")
        # The summary's status of each process says so.
        table = run.output_table()
        self.assertEqual(len(table), PROCESSES, run.describe())
        for process, row in table.items():
            self.assertIn(f"(plugin: 0 refused, {figures[process]['lost']} lost)", row[-1],
                          f"{process}\n{run.describe()}")
            self.assertFalse(row[-1].startswith("ok"), f"{process}\n{run.describe()}")
        # An output that delivered nothing failed the run (docs/operators.md).
        self.assertEqual(status, 3, run.describe())
        self.assert_no_secret_printed(run)

    def test_credentials_from_the_environment_with_a_session_token_are_accepted(self):
        self.verifier = Verifier(self.tmp, session_token=TOKEN)
        run = self.simulate({}, env=self.environment(AWS_ACCESS_KEY_ID=KEY_ID,
                                                     AWS_SECRET_ACCESS_KEY=SECRET,
                                                     AWS_SESSION_TOKEN=TOKEN))
        self.assert_every_push_accepted(run, token=True)

    def test_credentials_from_a_profile_of_the_shared_credentials_file_are_accepted(self):
        self.verifier = Verifier(self.tmp)
        credentials = self.secret_file("credentials", (
            "[default]\naws_access_key_id = AKIDOTHER\naws_secret_access_key = " + WRONG_SECRET +
            f"\n\n[metrics]\naws_access_key_id = {KEY_ID}\naws_secret_access_key = {SECRET}\n"))
        run = self.simulate({}, env=self.environment(AWS_SHARED_CREDENTIALS_FILE=credentials,
                                                     AWS_PROFILE="metrics"))
        self.assert_every_push_accepted(run, token=False)

    def test_the_otlp_outputs_signed_exports_are_accepted(self):
        if not OTLP_DIR:
            self.skipTest("the otlp plugin is not built")
        self.verifier = Verifier(self.tmp)
        sigv4 = {"region": REGION, "access_key_id_file": self.secret_file("id", KEY_ID),
                 "secret_access_key_file": self.secret_file("secret", SECRET)}
        run = rw.simulate_harness.OutputSimulation(
            self.tmp, "otlp", {"endpoint": self.verifier.url + "/v1/metrics",
                               "export_interval_ms": 200, "sigv4": sigv4},
            OTLP_DIR, "--ranks", "1", "--request-rate", "100", env=self.environment())
        self.runs.append(run)
        for request in self.accepted_requests(run):
            self.assertEqual(request["path"], "/v1/metrics")
            self.assertEqual(request["content_encoding"], "gzip")
            self.assertEqual(request["signed_headers"], "content-encoding;content-type;host;"
                             "x-amz-content-sha256;x-amz-date")
        self.assert_every_event_sent(run, "otlp")

    def otlp_over_grpc(self, secret, **settings):
        if not OTLP_DIR:
            self.skipTest("the otlp plugin is not built")
        self.verifier = Verifier(self.tmp)
        sigv4 = {"region": REGION, "access_key_id_file": self.secret_file("id", KEY_ID),
                 "secret_access_key_file": self.secret_file("secret", secret)}
        run = rw.simulate_harness.OutputSimulation(
            self.tmp, "otlp", {"protocol": "grpc", "endpoint": self.verifier.grpc_endpoint,
                               "export_interval_ms": 200, "initial_backoff_ms": 100,
                               "max_backoff_ms": 400, "sigv4": sigv4, **settings},
            OTLP_DIR, "--ranks", "1", "--request-rate", "100", env=self.environment())
        self.runs.append(run)
        return run

    def test_the_otlp_outputs_signed_grpc_calls_are_accepted(self):
        # HTTP/2 sends no Host header: what is signed as host is :authority.
        run = self.otlp_over_grpc(SECRET)
        for request in self.accepted_requests(run):
            self.assertEqual(request["protocol"], "grpc")
            self.assertEqual(request["path"],
                             "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export")
            signed = request["signed_headers"].split(";")
            for name in ("content-type", "host", "x-amz-content-sha256", "x-amz-date"):
                self.assertIn(name, signed, request)
        self.assert_every_event_sent(run, "otlp")

    def test_a_grpc_call_signed_with_a_wrong_secret_is_refused_unauthenticated(self):
        # Delta: a refused export's events are the plugin's lost.
        run = self.otlp_over_grpc(WRONG_SECRET, temporality="delta")
        self.assertTrue(rw.eventually(lambda: self.verifier.count(403) >= PROCESSES, 60),
                        run.describe())
        self.stop(run, status=3)  # nothing delivered
        self.assertEqual(self.verifier.count(200), 0)
        lines = run.plugin_lines("gRPC UNAUTHENTICATED (16)")
        self.assertTrue(lines, run.describe())
        self.assertTrue(all("signature mismatch" in line for line in lines), lines)
        self.assertFalse(run.plugin_lines("retrying"), run.describe())
        figures = run.plugin_figures("otlp")
        self.assertGreater(sum(counts["lost"] for counts in figures.values()), 0, figures)
        self.assertEqual(sum(counts["retries"] for counts in figures.values()), 0, figures)
        self.assert_no_secret_printed(run)

    # ------------------------------------------------------------ role_arn
    def role_sigv4(self, **settings):
        """Base credentials from files, the role, the verifier's STS."""
        return {"access_key_id_file": self.secret_file("id", KEY_ID),
                "secret_access_key_file": self.secret_file("secret", SECRET),
                "role_arn": ROLE_ARN, "sts_endpoint": self.verifier.sts_url, **settings}

    def assert_signed_with_issued_credentials(self, requests):
        """Every request signed with temporary credentials STS issued, their
        token signed too; returns the issued key ids the calls got."""
        calls = self.verifier.sts_calls()
        self.assertEqual([c for c in calls if c["status"] != 200], [])
        issued = {call["issued_key_id"] for call in calls}
        for call in calls:
            self.assertEqual((call["role_arn"], call["session_name"], call["duration_seconds"]),
                             (ROLE_ARN, "tokenspeed-metrics", 3600))
        for request in requests:
            self.assertIn(request["key_id"], issued, request)
            self.assertTrue(request["token"], request)
            self.assertIn("x-amz-security-token", request["signed_headers"].split(";"))
        return issued

    def test_with_a_role_arn_the_role_is_assumed_and_its_credentials_sign_every_push(self):
        self.verifier = Verifier(self.tmp, role={"arn": ROLE_ARN, "expiry_seconds": 3600})
        run = self.simulate(self.role_sigv4())
        requests = self.accepted_requests(run)
        self.assert_signed_with_issued_credentials(requests)
        self.assertNotIn(KEY_ID, {request["key_id"] for request in requests})  # the base key
        # One AssumeRole per process: an hour's credentials are cached.
        self.assertEqual(len(self.verifier.sts_calls()), PROCESSES, self.verifier.sts_calls())
        self.assert_every_push_accepted(run, token=True)

    def test_the_roles_short_lived_credentials_are_renewed_before_they_expire(self):
        # 6 s credentials: renewed at half life, so no push meets expired ones.
        self.verifier = Verifier(self.tmp, role={"arn": ROLE_ARN, "expiry_seconds": 6})
        run = self.simulate(self.role_sigv4())

        def renewed_in_use():
            keys = {r["key_id"] for r in self.verifier.requests() if r["status"] == 200}
            return len(keys) >= 2 * PROCESSES
        requests = self.accepted_requests(run, until=renewed_in_use)
        issued = self.assert_signed_with_issued_credentials(requests)
        self.assertGreaterEqual(len(issued), 2 * PROCESSES)
        self.assert_every_push_accepted(run, token=True)

    def test_an_sts_refusal_is_logged_retried_and_delivery_resumes_when_sts_allows(self):
        self.verifier = Verifier(self.tmp, role={"arn": ROLE_ARN, "expiry_seconds": 3600,
                                                 "refuse": True})
        run = self.simulate(self.role_sigv4())
        refused = f"STS AssumeRole of {ROLE_ARN} at {self.verifier.sts_url}: HTTP 403: AccessDenied"
        self.assertTrue(rw.eventually(lambda: len(run.plugin_lines(refused)) >= PROCESSES, 60),
                        run.describe())
        rw.simulate_harness.assert_engine_kept_going(self, run.metrics_url(), 1.0, run.describe())
        lines = run.plugin_lines(refused)
        for line in lines:
            self.assertIn("'sigv4.role_arn'", line)
            self.assertIn("not authorized to perform: sts:AssumeRole", line)
            self.assertIn("retrying in", line)
        # Rate-limited: STS was called more often than the log says so.
        self.assertGreater(len(self.verifier.sts_calls()), len(lines))
        self.assertEqual(self.verifier.requests(), [])  # nothing reached the receiver

        self.verifier.refuse_assume_role(False)
        self.assertTrue(rw.eventually(lambda: self.verifier.count(200) >= PROCESSES, 60),
                        run.describe())
        self.stop(run)
        self.assertEqual([r for r in self.verifier.requests() if r["status"] != 200], [])
        figures = run.plugin_figures("remote_write")
        self.assertEqual(len(figures), PROCESSES, run.describe())
        for process, counts in figures.items():
            # Retried, then delivered: nothing lost.
            self.assertGreater(counts["sent"], 0, f"{process}: {counts}")
            self.assertGreater(counts["retries"], 0, f"{process}: {counts}")
            self.assertEqual(counts["lost"], 0, f"{process}: {counts}")
        self.assert_no_secret_printed(run)

    def test_a_role_arn_that_is_not_a_roles_arn_fails_startup_naming_reporter_file_and_key(self):
        self.verifier = Verifier(self.tmp, role={"arn": ROLE_ARN, "expiry_seconds": 3600})
        run = self.simulate(self.role_sigv4(role_arn="tokenspeed-metrics-writer"))
        self.assertEqual(run.wait(), 2, run.describe())
        lines = [line for line in run.stderr_lines if line.strip()]
        self.assertEqual(len(lines), 1, run.describe())
        for part in ("reporter 'remote_write'", os.path.join(self.tmp, "metrics.json"),
                     "'sigv4.role_arn' must be an IAM role's ARN", '"tokenspeed-metrics-writer"'):
            self.assertIn(part, lines[0])
        self.assertEqual(self.verifier.sts_calls(), [])
        self.assert_no_secret_printed(run)

    def test_the_otlp_output_with_a_role_arn_exports_with_the_roles_credentials(self):
        if not OTLP_DIR:
            self.skipTest("the otlp plugin is not built")
        self.verifier = Verifier(self.tmp, role={"arn": ROLE_ARN, "expiry_seconds": 3600})
        run = rw.simulate_harness.OutputSimulation(
            self.tmp, "otlp", {"endpoint": self.verifier.url + "/v1/metrics",
                               "export_interval_ms": 200,
                               "sigv4": {"region": REGION, **self.role_sigv4()}},
            OTLP_DIR, "--ranks", "1", "--request-rate", "100", env=self.environment())
        self.runs.append(run)
        requests = self.accepted_requests(run)
        for request in requests:
            self.assertEqual(request["path"], "/v1/metrics")
        self.assert_signed_with_issued_credentials(requests)
        self.assertEqual(len(self.verifier.sts_calls()), PROCESSES, self.verifier.sts_calls())
        self.assert_every_event_sent(run, "otlp")


if __name__ == "__main__":
    skip_unless_verifier_installed()
    rw.main()
