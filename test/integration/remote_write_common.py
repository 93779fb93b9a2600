"""remote_write_common.py — what the remote_write tests share: a real
Prometheus 2.42 (remote-write receiver on; also behind its own TLS and basic
auth) and a real VictoriaMetrics 1.79,
each on its own loopback port with its own data directory; a fault-injecting
HTTP proxy in front of one (for 503/400/delays/hangs a real server cannot be
made to answer); one `simulate` run with prometheus and remote_write; the
/metrics scrape; PromQL. Starts only processes it stops again.

Environment (set by test/integration/meson.build):
  TSM_BINARY            the tokenspeed-metrics executable
  TSM_REMOTE_WRITE_DIR  the build folder holding remote_write.so
  TSM_PROMETHEUS        the prometheus executable ('' when missing)
  TSM_VICTORIA_METRICS  the victoria-metrics executable ('' when missing)
  TSM_TEST_TMPDIR       where temporary files go
"""
import http.server
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

import simulate_harness
# Also used by the tests through this module.
from simulate_harness import (  # noqa: F401
    EXIT_TIMEOUT_S, STARTUP_TIMEOUT_S, eventually, free_port, make_tmp)

PLUGIN_DIR = os.environ["TSM_REMOTE_WRITE_DIR"]
PROMETHEUS = os.environ.get("TSM_PROMETHEUS", "")
VICTORIA_METRICS = os.environ.get("TSM_VICTORIA_METRICS", "")
# The engine's series live in this window of the receivers' data.
WINDOW = "30m"
# The node remote_write names in its node label: this host's name.
NODE = socket.gethostname()
# How long a receiver may take to show what it accepted: a hang guard only.
AGREEMENT_TIMEOUT_S = 60


def skip_unless(test, program, what):
    """Skips test when a server is not installed (see main)."""
    if not program or not os.access(program, os.X_OK):
        test.skipTest(f"{what} is not installed")


def main():
    """unittest.main, exiting 77 (meson: skipped) when every test was skipped."""
    import unittest
    result = unittest.main(exit=False).result
    if result.testsRun and len(result.skipped) == result.testsRun:
        sys.exit(77)
    sys.exit(0 if result.wasSuccessful() else 1)


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


class Server:
    """A real receiver process on 127.0.0.1:port with its own data directory;
    its log is collected on a reader thread."""

    def __init__(self, tmp, port=0):
        self.port = port or free_port()
        self.data = tempfile.mkdtemp(dir=tmp)
        self.process = None
        self.log = []
        self.start()

    def command(self):
        raise NotImplementedError

    ready_path = "/-/ready"
    write_path = "/api/v1/write"

    def start(self):
        self.process = subprocess.Popen(self.command(), stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()

        def ready():
            try:
                self.get(self.url + self.ready_path, timeout=1)
                return True
            except OSError:
                return self.process.poll() is not None

        eventually(ready, STARTUP_TIMEOUT_S)
        if self.process.poll() is not None:
            raise AssertionError(f"{self.command()} did not start:\n" + "\n".join(self.log))

    def _read(self, stream):
        for line in stream:
            self.log.append(line.rstrip("\n"))

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def get(self, url, timeout=10):
        """A GET of the server's own API (a TLS server's adds its credentials)."""
        return http_get(url, timeout)

    @property
    def write_url(self):
        return self.url + self.write_path

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None:
            self.process.stdout.close()
        self.process = None

    def label_values(self, label):
        body = json.loads(self.get(f"{self.url}/api/v1/label/{label}/values"))
        return body.get("data") or []

    def series(self, match):
        """The label sets of every stored series matching match."""
        params = urllib.parse.urlencode({"match[]": match, "start": "0"})
        body = json.loads(self.get(f"{self.url}/api/v1/series?{params}"))
        return body.get("data") or []

    def query(self, promql, at=None):
        """The result list of an instant query."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        body = json.loads(self.get(self.url + "/api/v1/query?" + urllib.parse.urlencode(params)))
        if body.get("status") != "success":
            raise AssertionError(f"{promql}: {body}")
        return body["data"]["result"]


class Prometheus(Server):
    def command(self):
        config = os.path.join(self.data, "prometheus.yml")
        with open(config, "w") as file:
            file.write("global:\n  scrape_interval: 1h\n")
        return [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.data}",
                f"--web.listen-address=127.0.0.1:{self.port}", "--web.enable-remote-write-receiver"]

    def sample_errors(self):
        """Log lines of refused samples (out of order, duplicate, too old)."""
        words = ("out of order", "out-of-order", "duplicate sample", "out of bounds")
        return [line for line in self.log if any(word in line.lower() for word in words)]


class TlsPrometheus(Prometheus):
    """A Prometheus whose whole web endpoint, the remote-write receiver
    included, sits behind its own --web.config.file: TLS with the server
    certificate of material (tls_material.TlsMaterial) and basic auth of one
    user (a bcrypt hash made by htpasswd)."""

    def __init__(self, tmp, material, username, password, port=0):
        self.material = material
        self.username = username
        self.password = password
        super().__init__(tmp, port)

    def command(self):
        from tls_material import bcrypt_hash
        web_config = os.path.join(self.data, "web.yml")
        with open(web_config, "w") as file:
            file.write("tls_server_config:\n"
                       f"  cert_file: {self.material.path('server.crt')}\n"
                       f"  key_file: {self.material.path('server.key')}\n"
                       "basic_auth_users:\n"
                       f"  {self.username}: '{bcrypt_hash(self.password)}'\n")
        return super().command() + [f"--web.config.file={web_config}"]

    @property
    def url(self):
        return f"https://127.0.0.1:{self.port}"

    def get(self, url, timeout=10):
        import base64
        import ssl
        context = ssl.create_default_context(cafile=self.material.path("ca.crt"))
        credentials = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
        request = urllib.request.Request(url, headers={"Authorization": "Basic " + credentials})
        with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
            return response.read().decode()


class VictoriaMetrics(Server):
    ready_path = "/health"

    def command(self):
        return [VICTORIA_METRICS, f"-httpListenAddr=127.0.0.1:{self.port}",
                f"-storageDataPath={self.data}", "-retentionPeriod=1d",
                "-search.latencyOffset=0s", "-selfScrapeInterval=0"]


class ReceiverRuns:
    """Mixed into a TestCase whose server_class is its receiver: the
    receiver in a private directory, and `simulate` runs into it, killed at
    the end of the test."""
    maxDiff = None
    server_class = None

    def setUp(self):
        self.tmp = make_tmp()
        self.server = self.server_class(self.tmp)
        self.runs = []

    def tearDown(self):
        for run in self.runs:
            run.kill()
        self.server.stop()

    def simulate(self, settings, *args):
        """A run whose remote_write output pushes to the receiver every
        200 ms, with settings over those."""
        run = Simulation(self.tmp, dict({"url": self.server.write_url, "push_interval_ms": 200},
                                        **settings), *args)
        self.runs.append(run)
        return run


class OnPrometheus:
    """Mixed in before a test class whose self.server is its receiver: a real
    Prometheus, the test skipped when none is installed, and its log left
    without a refused sample (out of order, duplicate) at the end."""
    server_class = Prometheus

    def setUp(self):
        skip_unless(self, PROMETHEUS, "prometheus")
        super().setUp()

    def tearDown(self):
        super().tearDown()
        self.assertEqual(self.server.sample_errors(), [], "\n".join(self.server.log))


class OnVictoriaMetrics:
    """As OnPrometheus, with a real VictoriaMetrics."""
    server_class = VictoriaMetrics

    def setUp(self):
        skip_unless(self, VICTORIA_METRICS, "victoria-metrics")
        super().setUp()


class FaultProxy:
    """An HTTP server that forwards remote-write requests to a real receiver,
    except those it is told to answer itself: scripted responses in order
    ({"status": 503, "retry_after": "1"}, {"status": 400, "body": "..."},
    {"delay_ms": 1500} before forwarding, {"hang": True}), then a default."""

    def __init__(self, target):
        self.target = target
        self.responses = []
        self.default = {}
        self.requests = []  # one dict per request: its headers and what it got
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                with proxy.lock:
                    plan = proxy.responses.pop(0) if proxy.responses else dict(proxy.default)
                    record = {"headers": {k.lower(): v for k, v in self.headers.items()},
                              "size": len(body)}
                    proxy.requests.append(record)
                if plan.get("hang"):
                    record["status"] = "hang"
                    time.sleep(120)  # the fault: a receiver that never answers
                    return
                if "delay_ms" in plan:
                    # Slower than the client's timeout: the answer finds it gone.
                    time.sleep(plan["delay_ms"] / 1000)
                    plan.setdefault("status", 503)
                if "status" in plan:
                    record["status"] = plan["status"]
                    text = plan.get("body", "").encode()
                    try:
                        self.send_response(plan["status"])
                        if "retry_after" in plan:
                            self.send_header("Retry-After", plan["retry_after"])
                        self.send_header("Content-Length", str(len(text)))
                        self.end_headers()
                        self.wfile.write(text)
                    except OSError:
                        record["status"] = "client gone"
                    return
                forward = urllib.request.Request(proxy.target, data=body, method="POST",
                                                 headers=dict(self.headers.items()))
                try:
                    with urllib.request.urlopen(forward, timeout=10) as response:
                        status, text = response.status, response.read()
                except urllib.error.HTTPError as error:
                    status, text = error.code, error.read()
                record["status"] = status
                try:
                    self.send_response(status)
                    self.send_header("Content-Length", str(len(text)))
                    self.end_headers()
                    self.wfile.write(text)
                except OSError:
                    record["status"] = "client gone"

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/api/v1/write"

    def script(self, responses=(), default=None):
        with self.lock:
            self.responses = list(responses)
            if default is not None:
                self.default = default

    def statuses(self):
        with self.lock:
            return [r.get("status") for r in self.requests]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


class Simulation(simulate_harness.OutputSimulation):
    """One `simulate` process with prometheus and remote_write (settings: the
    remote_write output's settings object)."""

    def __init__(self, tmp, settings, *args, env=None):
        super().__init__(tmp, "remote_write", settings, PLUGIN_DIR, *args, env=env)

    def output_table(self):
        """{process: [accepted, delivered, dropped, discarded, status]} of remote_write."""
        return self.output_fields("remote_write")


def scrape(url):
    return http_get(url)


def prometheus_series(text):
    """{(sample name, frozenset(labels)): value} of the engine's series."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("tokenspeed:"):
                continue
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = float(labels["le"])
            out[(sample.name, frozenset(labels.items()))] = sample.value
    return out


def cumulative_samples(exposition):
    """The scrape's counter totals and histogram buckets, counts and sums."""
    return {key: value for key, value in prometheus_series(exposition).items()
            if key[0].endswith(("_total", "_bucket", "_count", "_sum"))}


def promql_series(server, aggregation, names, inner="last_over_time({name}[" + WINDOW + "])",
                  at=None):
    """{(name, frozenset(labels)): value}: for each name, the PromQL
    `aggregation without (process) (inner)` the documentation gives, without
    the node label of this node."""
    out = {}
    for name in sorted(names):
        query = f"{aggregation} without (process) ({inner.format(name=name)})"
        for result in server.query(query, at=at):
            labels = dict(result["metric"])
            labels.pop("__name__", None)
            # One node: the node label (node_label, the host name) is the
            # same on every series and absent from /metrics; another value
            # stays and shows as a mismatch.
            if labels.get("node") == NODE:
                del labels["node"]
            if "le" in labels:
                labels["le"] = float(labels["le"])
            out[(name, frozenset(labels.items()))] = float(result["value"][1])
    return out


def promql_mismatches(server, exposition):
    """(scraped, pushed, mismatches): the scrape's cumulative samples, their
    `sum without (process)` over the pushed series, and the lines where the
    two differ."""
    scraped = cumulative_samples(exposition)
    pushed = promql_series(server, "sum", {name for name, _ in scraped})
    mismatches = []
    for key, value in sorted(scraped.items(), key=str):
        got = pushed.get(key, 0)
        if not math.isclose(got, value, rel_tol=1e-9, abs_tol=1e-9):
            mismatches.append(f"{key[0]} {dict(key[1])}: /metrics {value}, PromQL {got}")
    return scraped, pushed, mismatches


def assert_promql_equals_scrape(test, server, exposition, timeout=AGREEMENT_TIMEOUT_S):
    """Every counter total, histogram bucket count, count and sum of /metrics
    equals `sum without (process)` of the pushed series (a series that never
    had an event shows 0 on /metrics and was never pushed). A receiver shows
    what it took after a moment (VictoriaMetrics about a second, longer on a
    busy machine): polls until they agree, then asserts."""
    compared = []
    eventually(
        lambda: compared.append(promql_mismatches(server, exposition)) or not compared[-1][2],
        timeout, interval=0.5)
    scraped, pushed, mismatches = compared[-1]
    test.assertTrue(scraped, "the scrape has no counter or histogram")
    test.assertTrue(pushed, "PromQL found no pushed series")
    test.assertLessEqual(set(pushed) - set(scraped), set(), "pushed series missing on /metrics")
    test.assertEqual(mismatches, [])
    return pushed
