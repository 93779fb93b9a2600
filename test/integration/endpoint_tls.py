"""endpoint_tls.py — the /metrics endpoint of a running `simulate` behind a
web configuration (--metrics-web-config), against a real Prometheus 2.42 and
curl, with certificates and bcrypt hashes made by openssl and htpasswd:
Prometheus scrapes over HTTPS with basic auth, and with a client certificate
under RequireAndVerifyClientCert; a wrong password gets 401 and is counted and
logged; without a trusted client certificate the handshake fails; plain HTTP
to the TLS port gets Go's 400 while the endpoint keeps serving; a changed
file takes effect, a broken one leaves the last good one in force; a bad
file stops start-up with one line naming the file and the key. Without
Prometheus (curl and openssl s_client only): an emptied file is a failed
reload, a valid file that would lower security is refused until a restart, a
certificate replaced by a FIFO is a failed reload while the endpoint serves
on, TLS 1.2 offers Go's default suites only, client certificates are
verified against the system's CAs when no client CA is given; and where
exporter-toolkit's verdicts are the spec: `client_allowed_sans: []` admits no
client, a client CA file of an intermediate CA alone verifies the clients it
signed, a client CA file without certificates starts and verifies no one,
`min_version: TLS10` serves TLS 1.0.

Environment (set by test/integration/meson.build):
  TSM_BINARY      the tokenspeed-metrics executable
  TSM_PROMETHEUS  the prometheus executable ("" when not installed: skipped)
  TSM_TEST_TMPDIR where temporary files go
"""
import json
import os
import shutil
import subprocess
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

import simulate_harness as sh
from tls_material import TlsMaterial, bcrypt_hash

PROMETHEUS = os.environ.get("TSM_PROMETHEUS", "")
# Hang guards only: conditions are polled until they hold.
QUERY_TIMEOUT_S = 120


def curl(*args):
    """curl's exit status, response headers and body (no retries, 20 s guard)."""
    done = subprocess.run(["curl", "-sS", "-m", "20", "-D", "-", *args], capture_output=True)
    # Decoded by hand: text mode would turn the header block's CRLFs into LFs.
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def status_of(headers):
    first = headers.split("\r\n", 1)[0].split()
    return int(first[1]) if len(first) >= 2 and first[1].isdigit() else 0


class ScrapingPrometheus:
    """A real Prometheus that scrapes target every second with the given
    extra scrape settings (YAML lines of the job); its own API is plain HTTP."""

    def __init__(self, tmp, target, job_settings):
        self.port = sh.free_port()
        self.data = os.path.join(tmp, "prometheus")
        os.makedirs(self.data)
        config = os.path.join(self.data, "prometheus.yml")
        with open(config, "w") as file:
            file.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                       "scrape_configs:\n  - job_name: tokenspeed\n    scheme: https\n"
                       f"    static_configs:\n      - targets: ['{target}']\n")
            for line in job_settings:
                file.write(f"    {line}\n")
        self.log = []
        self.process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={self.data}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.process.stdout:
            self.log.append(line.rstrip("\n"))

    def query(self, promql):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql})
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())["data"]["result"]
        except OSError:
            return None  # not ready yet

    def value(self, promql):
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@unittest.skipUnless(PROMETHEUS and os.path.exists(PROMETHEUS), "prometheus is not installed")
class EndpointTls(unittest.TestCase):
    maxDiff = None

    def setUp(self):
        self.tmp = sh.make_tmp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tls = TlsMaterial(os.path.join(self.tmp, "tls"))
        self.web_config = os.path.join(self.tmp, "web.yml")
        self.run_ = None

    def tearDown(self):
        if self.run_ is not None:
            self.run_.kill()

    def write_web_config(self, text):
        # Written whole under another name, then renamed: the endpoint never
        # reads half a file.
        with open(self.web_config + ".new", "w") as file:
            file.write(text)
        os.chmod(self.web_config + ".new", 0o600)
        os.replace(self.web_config + ".new", self.web_config)

    def start(self, web_config_text):
        self.write_web_config(web_config_text)
        self.run_ = sh.Simulation(["--enable-metrics", "--metrics-port", "0", "--ranks", "1",
                                   "--duration", "0", "--metrics-web-config", self.web_config])
        url = self.run_.metrics_url()
        self.assertTrue(url.startswith("https://127.0.0.1:"), url)
        return url

    def tls_server(self, extra=""):
        return (f"tls_server_config:\n  cert_file: {self.tls.path('server.crt')}\n"
                f"  key_file: {self.tls.path('server.key')}\n{extra}")

    def curl_tls(self, url, *args):
        return curl("--cacert", self.tls.path("ca.crt"), *args, url)

    def self_metric(self, url, name, auth=(), **labels):
        code, out, _ = self.curl_tls(url, *auth)
        body = out.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in out else ""
        return sh.sample_sum(body, name, **labels) if code == 0 else None

    def scraped_by_prometheus(self, prometheus):
        up = sh.eventually(lambda: prometheus.value('up{job="tokenspeed"}') == 1, QUERY_TIMEOUT_S,
                           0.5)
        tokens = sh.eventually(lambda: (prometheus.value(
            'sum(tokenspeed:generation_tokens_total{job="tokenspeed"})') or 0) > 0,
            QUERY_TIMEOUT_S, 0.5)
        return up and tokens

    def test_prometheus_scrapes_over_https_with_basic_auth(self):
        password = "correct horse battery staple"
        url = self.start(self.tls_server() +
                         f"basic_auth_users:\n  prometheus: {bcrypt_hash(password)}\n"
                         "http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n")
        password_file = os.path.join(self.tmp, "password")
        with open(password_file, "w") as file:
            file.write(password)
        target = url.split("/")[2]
        prometheus = ScrapingPrometheus(self.tmp, target, [
            "basic_auth:", "  username: prometheus", f"  password_file: {password_file}",
            "tls_config:", f"  ca_file: {self.tls.path('ca.crt')}"])
        self.addCleanup(prometheus.stop)
        self.assertTrue(self.scraped_by_prometheus(prometheus),
                        "\n".join(prometheus.log[-20:]) + self.run_.describe())

        # A wrong password, and none: 401 with a Basic challenge, counted and logged.
        code, headers, _ = self.curl_tls(url, "-u", "prometheus:Tr0ub4dor&3")
        self.assertEqual(code, 0)
        self.assertEqual(status_of(headers), 401, headers)
        self.assertIn("www-authenticate: basic", headers.lower())
        self.assertIn("x-content-type-options: nosniff", headers.lower())
        code, headers, _ = self.curl_tls(url)
        self.assertEqual(status_of(headers), 401, headers)
        code, headers, _ = self.curl_tls(url, "-u", "nobody:" + password)
        self.assertEqual(status_of(headers), 401, headers)
        refused = self.self_metric(url, "tokenspeed_metrics_endpoint_requests_refused_total",
                                   ("-u", "prometheus:" + password), reason="unauthorized")
        self.assertGreaterEqual(refused, 3)
        self.assertTrue(sh.eventually(lambda: any("requests refused (401)" in line
                                                  for line in self.run_.stderr_lines), 30),
                        self.run_.describe())
        for line in self.run_.stdout_lines + self.run_.stderr_lines:
            self.assertNotIn(password, line)
            self.assertNotIn("Tr0ub4dor&3", line)

    def test_prometheus_scrapes_with_a_client_certificate_it_must_present(self):
        url = self.start(self.tls_server(
            "  client_auth_type: RequireAndVerifyClientCert\n"
            f"  client_ca_file: {self.tls.path('ca.crt')}\n"))
        target = url.split("/")[2]
        prometheus = ScrapingPrometheus(self.tmp, target, [
            "tls_config:", f"  ca_file: {self.tls.path('ca.crt')}",
            f"  cert_file: {self.tls.path('client.crt')}",
            f"  key_file: {self.tls.path('client.key')}"])
        self.addCleanup(prometheus.stop)
        self.assertTrue(self.scraped_by_prometheus(prometheus),
                        "\n".join(prometheus.log[-20:]) + self.run_.describe())

        client = ("--cert", self.tls.path("client.crt"), "--key", self.tls.path("client.key"))
        handshakes_before = self.self_metric(
            url, "tokenspeed_metrics_endpoint_connections_closed_total", client,
            reason="tls_handshake")
        # No client certificate, and one of a CA nobody trusts: no handshake.
        code, headers, err = self.curl_tls(url)
        self.assertNotEqual(code, 0, headers)
        self.assertEqual(headers, "")
        code, headers, err = self.curl_tls(url, "--cert", self.tls.path("stranger.crt"),
                                           "--key", self.tls.path("stranger.key"))
        self.assertNotEqual(code, 0, headers)
        self.assertEqual(headers, "")
        # Plain HTTP to the TLS port: Go's answer (400 and its text), closed.
        code, out, err = curl(url.replace("https://", "http://"))
        self.assertEqual(code, 0, err)
        self.assertEqual(out, "HTTP/1.0 400 Bad Request\r\n\r\n"
                              "Client sent an HTTP request to an HTTPS server.\n")
        # The endpoint keeps serving, and counted the three.
        code, headers, _ = self.curl_tls(url, *client)
        self.assertEqual((code, status_of(headers)), (0, 200), headers)
        handshakes_after = self.self_metric(
            url, "tokenspeed_metrics_endpoint_connections_closed_total", client,
            reason="tls_handshake")
        self.assertGreaterEqual(handshakes_after - handshakes_before, 3)

    def test_a_changed_file_takes_effect_and_a_broken_one_keeps_the_last_good(self):
        url = self.start(self.tls_server() + f"basic_auth_users:\n  alice: {bcrypt_hash('a-pw')}\n")
        self.assertEqual(status_of(self.curl_tls(url, "-u", "alice:a-pw")[1]), 200)
        self.assertEqual(status_of(self.curl_tls(url, "-u", "bob:b-pw")[1]), 401)

        self.write_web_config(self.tls_server() + f"basic_auth_users:\n  bob: {bcrypt_hash('b-pw')}\n")
        self.assertTrue(sh.eventually(
            lambda: status_of(self.curl_tls(url, "-u", "bob:b-pw")[1]) == 200, 60, 0.2),
            self.run_.describe())
        self.assertEqual(status_of(self.curl_tls(url, "-u", "alice:a-pw")[1]), 401)
        self.assertEqual(self.self_metric(url, "tokenspeed_metrics_endpoint_web_config_reloads_total",
                                          ("-u", "bob:b-pw"), result="success"), 1)

        # A broken file: logged once, counted, the last good configuration serves on.
        self.write_web_config(self.tls_server() + "basic_auth_users:\n  bob: not-a-bcrypt-hash\n")
        failures = lambda: self.self_metric(  # noqa: E731
            url, "tokenspeed_metrics_endpoint_web_config_reloads_total", ("-u", "bob:b-pw"),
            result="failure")
        self.assertTrue(sh.eventually(lambda: failures() == 1, 60, 0.2), self.run_.describe())
        self.assertEqual(status_of(self.curl_tls(url, "-u", "bob:b-pw")[1]), 200)
        # The line is read from the process's stderr by a thread: waited for.
        self.assertTrue(sh.eventually(lambda: self.run_.plugin_lines("not reloaded"), 60, 0.2),
                        self.run_.describe())
        not_reloaded = [line for line in self.run_.stderr_lines if "not reloaded" in line]
        self.assertEqual(len(not_reloaded), 1, self.run_.describe())
        self.assertIn("basic_auth_users.bob", not_reloaded[0])
        self.assertNotIn("not-a-bcrypt-hash", not_reloaded[0])

        # A rotated certificate: the next handshake presents the new one.
        before = subprocess.run(["openssl", "x509", "-noout", "-serial", "-in",
                                 self.tls.path("server.crt")], capture_output=True, text=True).stdout
        rotated = TlsMaterial(os.path.join(self.tmp, "rotated"))
        self.write_web_config(
            f"tls_server_config:\n  cert_file: {rotated.path('server.crt')}\n"
            f"  key_file: {rotated.path('server.key')}\n"
            f"basic_auth_users:\n  bob: {bcrypt_hash('b-pw')}\n")
        rotated_ok = lambda: status_of(curl("--cacert", rotated.path("ca.crt"), "-u",  # noqa: E731
                                            "bob:b-pw", url)[1]) == 200
        self.assertTrue(sh.eventually(rotated_ok, 60, 0.2), self.run_.describe())
        self.assertNotEqual(before, "")
        code, _, _ = self.curl_tls(url, "-u", "bob:b-pw")  # the old CA no longer verifies it
        self.assertNotEqual(code, 0)

    def test_a_bad_web_configuration_stops_start_up_with_one_line(self):
        self.write_web_config(self.tls_server("  client_auth_type: TrustEveryone\n"))
        for command in (["check"], ["simulate", "--duration", "1"]):
            done = subprocess.run([os.environ["TSM_BINARY"], *command, "--enable-metrics",
                                   "--metrics-port", "0", "--metrics-web-config", self.web_config],
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(done.returncode, 2, done.stderr)
            lines = done.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, done.stderr)
            self.assertIn(f"file '{self.web_config}'", lines[0])
            self.assertIn("key 'tls_server_config.client_auth_type'", lines[0])
        hash_text = bcrypt_hash("pw")
        self.write_web_config(self.tls_server("  key: inline\n") +
                              f"basic_auth_users:\n  a: {hash_text}\n")
        done = subprocess.run([os.environ["TSM_BINARY"], "check", "--enable-metrics",
                               "--metrics-port", "0", "--metrics-web-config", self.web_config],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertNotIn(hash_text, done.stdout + done.stderr)
        self.assertIn("tls_server_config.key", done.stderr)

    def check(self):
        return subprocess.run([os.environ["TSM_BINARY"], "check", "--enable-metrics",
                               "--metrics-port", "0", "--metrics-web-config", self.web_config],
                              capture_output=True, text=True, timeout=60)

    def test_a_private_key_others_can_read_is_warned_about(self):
        self.write_web_config(self.tls_server())
        done = self.check()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertNotIn("warning", done.stderr)
        self.assertIn(f"prometheus: built-in; web configuration {self.web_config}: TLS TLS12-TLS13 "
                      "(client certificates: NoClientCert), 0 basic-auth users", done.stdout)
        os.chmod(self.tls.path("server.key"), 0o640)
        done = self.check()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"warning: prometheus: {self.tls.path('server.key')} "
                      "(tls_server_config.key_file of", done.stderr)
        self.assertIn("readable by other users (mode 0640)", done.stderr)
        # An inline key in a file others can read: named by its key, never shown.
        with open(self.tls.path("server.key")) as file:
            key = file.read()
        self.write_web_config(f"tls_server_config:\n  cert_file: {self.tls.path('server.crt')}\n"
                              "  key: |\n" + "".join("    " + line + "\n"
                                                     for line in key.splitlines()))
        os.chmod(self.web_config, 0o644)
        done = self.check()
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn(f"{self.web_config}: 'tls_server_config.key' holds a secret", done.stderr)
        self.assertIn("(mode 0644); restrict it (chmod 600) or use key_file", done.stderr)
        for line in key.splitlines()[1:-1]:
            self.assertNotIn(line, done.stdout + done.stderr)


def s_client(port, ca_file, *args):
    """openssl s_client's handshake with the endpoint: (succeeded, output)."""
    done = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{port}",
                           "-CAfile", ca_file, "-verify_return_error", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    return done.returncode == 0, done.stdout + done.stderr


class EndpointTlsWithoutPrometheus(unittest.TestCase):
    """What the endpoint does with its web configuration, seen with curl and
    openssl s_client only: reloads that fail closed, files that are FIFOs,
    Go's TLS defaults, client certificates verified against the system's CAs."""
    maxDiff = None

    def setUp(self):
        self.tmp = sh.make_tmp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.tls = TlsMaterial(os.path.join(self.tmp, "tls"))
        self.web_config = os.path.join(self.tmp, "web.yml")
        self.run_ = None

    def tearDown(self):
        if self.run_ is not None:
            self.run_.kill()

    def start(self, web_config_text, env=None):
        with open(self.web_config, "w") as file:
            file.write(web_config_text)
        os.chmod(self.web_config, 0o600)
        self.run_ = sh.Simulation(["--enable-metrics", "--metrics-port", "0", "--ranks", "1",
                                   "--duration", "0", "--metrics-web-config", self.web_config],
                                  env=env)
        url = self.run_.metrics_url()
        return url, int(url.split(":")[2].split("/")[0])

    def rewrite_in_place(self, text):
        """As an editor saves: the same file truncated, then written."""
        with open(self.web_config, "w") as file:
            file.write(text)

    def tls_server(self, material=None, extra=""):
        material = material or self.tls
        return (f"tls_server_config:\n  cert_file: {material.path('server.crt')}\n"
                f"  key_file: {material.path('server.key')}\n{extra}")

    def reloads(self, url, result, *auth):
        code, out, _ = curl("--cacert", self.tls.path("ca.crt"), *auth, url)
        body = out.split("\r\n\r\n", 1)[1] if "\r\n\r\n" in out else ""
        if code != 0 or status_of(out) != 200:
            return None
        return sh.sample_sum(body, "tokenspeed_metrics_endpoint_web_config_reloads_total",
                             result=result)

    def test_an_emptied_file_keeps_tls_and_users_and_a_lowering_is_refused_until_a_restart(self):
        users = f"basic_auth_users:\n  alice: {bcrypt_hash('pw')}\n"
        url, _ = self.start(self.tls_server() + users)
        auth = ("-u", "alice:pw")
        # Truncated in place and left empty (an editor between truncate and
        # write): a failed reload; TLS and the user stay in force.
        self.rewrite_in_place("")
        self.assertTrue(sh.eventually(lambda: self.reloads(url, "failure", *auth) == 1, 60, 0.2),
                        self.run_.describe())
        code, headers, _ = curl("--cacert", self.tls.path("ca.crt"), url)
        self.assertEqual((code, status_of(headers)), (0, 401), headers)
        self.assertTrue(
            sh.eventually(lambda: self.run_.plugin_lines("web configuration is empty"), 60, 0.2),
            self.run_.describe())
        # Valid files that would lower security (cut before basic_auth_users,
        # cut before tls_server_config, '{}' written over it): each refused,
        # counted, and named in one line; TLS and the user stay in force.
        lowered = [(self.tls_server(), "basic authentication"), (users, "TLS"),
                   ("{}\n", "TLS, basic authentication")]
        for count, (text, removed) in enumerate(lowered, start=1):
            self.rewrite_in_place(text)
            self.assertTrue(
                sh.eventually(lambda: self.reloads(url, "weaker", *auth) == count, 60, 0.2),
                self.run_.describe())
            self.assertTrue(sh.eventually(
                lambda: len(self.run_.plugin_lines("would switch off")) == count, 60, 0.2),
                self.run_.describe())
            line = [line for line in self.run_.stderr_lines if "would switch off" in line][-1]
            self.assertIn("not reloaded, the previous one stays in force", line)
            self.assertIn(f"would switch off {removed};", line)
            code, headers, _ = curl("--cacert", self.tls.path("ca.crt"), url)
            self.assertEqual((code, status_of(headers)), (0, 401), headers)
            code, headers, _ = curl(url.replace("https://", "http://"))
            self.assertNotEqual(status_of(headers), 200, headers)
        self.assertEqual(self.reloads(url, "success", *auth), 0)
        self.assertFalse(any("reloaded" in line and "not reloaded" not in line
                             for line in self.run_.stderr_lines), self.run_.describe())
        # Lowering takes a restart: started again with the file, it serves
        # plain HTTP to anyone.
        self.run_.kill()
        url, _ = self.start("{}\n")
        code, headers, _ = curl(url)
        self.assertEqual((code, status_of(headers)), (0, 200), headers)

    def test_a_certificate_replaced_by_a_fifo_is_a_failed_reload_while_the_endpoint_serves(self):
        url, _ = self.start(self.tls_server())
        fifo = os.path.join(self.tmp, "fifo")
        os.mkfifo(fifo)
        os.replace(fifo, self.tls.path("server.crt"))
        # Each curl has 20 s: a reload blocked in open(2) froze every connection.
        self.assertTrue(sh.eventually(lambda: self.reloads(url, "failure") == 1, 60, 0.2),
                        self.run_.describe())
        self.assertTrue(sh.eventually(lambda: self.run_.plugin_lines("not reloaded"), 60, 0.2),
                        self.run_.describe())
        failed = [line for line in self.run_.stderr_lines if "not reloaded" in line]
        self.assertEqual(len(failed), 1, self.run_.describe())
        self.assertIn("key 'tls_server_config.cert_file'", failed[0])
        self.assertIn("not a regular file (a FIFO)", failed[0])
        self.assertEqual(self.reloads(url, "success"), 0)

    def test_tls12_offers_gos_default_suites_and_refuses_the_rest(self):
        rsa = TlsMaterial(os.path.join(self.tmp, "rsa"), server_key="RSA")
        _, port = self.start(self.tls_server(rsa))
        ca = rsa.path("ca.crt")
        for suite in ("ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384",
                      "ECDHE-RSA-CHACHA20-POLY1305", "ECDHE-RSA-AES128-SHA",
                      "ECDHE-RSA-AES256-SHA"):
            with self.subTest(accepted=suite):
                ok, out = s_client(port, ca, "-tls1_2", "-cipher", suite)
                self.assertTrue(ok, out)
                self.assertIn(f"Cipher is {suite}", out)
        # RSA key exchange and CBC with SHA-256/384: Go's defaults leave them out.
        for suite in ("AES128-GCM-SHA256", "AES256-GCM-SHA384", "AES128-SHA", "AES256-SHA",
                      "AES128-SHA256", "AES256-SHA256", "ECDHE-RSA-AES128-SHA256",
                      "ECDHE-RSA-AES256-SHA384"):
            with self.subTest(refused=suite):
                ok, out = s_client(port, ca, "-tls1_2", "-cipher", suite)
                self.assertFalse(ok, out)
        ok, out = s_client(port, ca, "-tls1_3")
        self.assertTrue(ok, out)

    def test_a_cipher_list_of_tls13_names_only_opens_no_tls12_suite(self):
        _, port = self.start(self.tls_server(extra="  cipher_suites: [TLS_AES_128_GCM_SHA256]\n")
                             + "http_server_config:\n  http2: false\n")
        ca = self.tls.path("ca.crt")
        for suite in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-SHA384",
                      "ECDHE-ECDSA-AES128-SHA"):
            with self.subTest(refused=suite):
                ok, out = s_client(port, ca, "-tls1_2", "-cipher", suite)
                self.assertFalse(ok, out)
        ok, out = s_client(port, ca, "-tls1_3")
        self.assertTrue(ok, out)

    def test_client_certificates_are_verified_against_the_systems_cas_without_client_ca(self):
        # OpenSSL's default verify paths honour SSL_CERT_FILE: here the
        # "system's CAs" are the test CA.
        env = dict(os.environ, SSL_CERT_FILE=self.tls.path("ca.crt"))
        url, _ = self.start(self.tls_server(extra="  client_auth_type: RequireAndVerifyClientCert\n"),
                            env=env)
        client = ("--cert", self.tls.path("client.crt"), "--key", self.tls.path("client.key"))
        code, headers, _ = curl("--cacert", self.tls.path("ca.crt"), *client, url)
        self.assertEqual((code, status_of(headers)), (0, 200), headers + self.run_.describe())
        code, headers, _ = curl("--cacert", self.tls.path("ca.crt"), "--cert",
                                self.tls.path("stranger.crt"), "--key",
                                self.tls.path("stranger.key"), url)
        self.assertNotEqual(code, 0, headers)
        code, headers, _ = curl("--cacert", self.tls.path("ca.crt"), url)
        self.assertNotEqual(code, 0, headers)

    # Where exporter-toolkit's (Go's) verdicts differ from OpenSSL's defaults.

    def client_status(self, url, client):
        args = ("--cert", self.tls.path(client + ".crt"), "--key", self.tls.path(client + ".key"))
        code, headers, _ = curl("--cacert", self.tls.path("ca.crt"), *args, url)
        return status_of(headers) if code == 0 else None

    def verifying(self, client_ca, extra=""):
        return self.tls_server(extra="  client_auth_type: RequireAndVerifyClientCert\n"
                                     f"  client_ca_file: {client_ca}\n{extra}")

    def test_an_empty_client_allowed_sans_admits_no_client(self):
        url, _ = self.start(self.verifying(self.tls.path("ca.crt"), "  client_allowed_sans: []\n"))
        self.assertIsNone(self.client_status(url, "client"), self.run_.describe())
        self.run_.kill()
        url, _ = self.start(self.verifying(self.tls.path("ca.crt"),
                                           "  client_allowed_sans: [scraper.test]\n"))
        self.assertEqual(self.client_status(url, "client"), 200, self.run_.describe())

    def test_a_client_ca_file_of_an_intermediate_ca_alone_verifies_the_clients_it_signed(self):
        url, _ = self.start(self.verifying(self.tls.path("intermediate.crt")))
        self.assertEqual(self.client_status(url, "below-intermediate"), 200, self.run_.describe())
        # The root's own client is not below the intermediate: refused.
        self.assertIsNone(self.client_status(url, "client"), self.run_.describe())

    def test_a_client_ca_file_without_certificates_starts_and_verifies_no_client(self):
        empty_ca = os.path.join(self.tmp, "no-certificates.pem")
        with open(empty_ca, "w") as file:
            file.write("# the CA certificates go here\n")
        url, _ = self.start(self.verifying(empty_ca))
        self.assertTrue(sh.eventually(lambda: any(
            "'tls_server_config.client_ca_file' holds no certificate" in line
            for line in self.run_.stderr_lines), 30), self.run_.describe())
        self.assertIsNone(self.client_status(url, "client"), self.run_.describe())

    def test_min_version_tls10_serves_tls10_and_the_default_does_not(self):
        ca = self.tls.path("ca.crt")
        # The client must allow TLS 1.0 too: Debian's OpenSSL does so only
        # at security level 0.
        tls10 = ("-tls1", "-cipher", "DEFAULT@SECLEVEL=0")
        _, port = self.start(self.tls_server(extra="  min_version: TLS10\n"))
        ok, out = s_client(port, ca, *tls10)
        self.assertTrue(ok, out)
        self.assertIn("Protocol  : TLSv1\n", out)
        ok, out = s_client(port, ca, "-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0")
        self.assertTrue(ok, out)
        self.run_.kill()
        _, port = self.start(self.tls_server())
        ok, out = s_client(port, ca, *tls10)
        self.assertFalse(ok, out)


if __name__ == "__main__":
    unittest.main()
