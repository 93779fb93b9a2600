"""hostile_clients.py — the built-in /metrics endpoint of a running `simulate`
under hostile clients: a slow reader of a large response, slowloris (headers
a byte at a time), oversized and malformed requests, pipelined requests,
half-closed sockets and a thousand idle connections. Throughout, a
well-behaved scraper gets a correct 200 exposition on every attempt, the
launcher's resident memory stays bounded, the endpoint counts what it closed
(its self-metrics on /metrics), and the engine's record path is unaffected:
the jsonl output's rows in the shutdown report show every event delivered,
none dropped. HostileClientsOverTls runs it all again against the endpoint
serving TLS (--metrics-web-config), where the thousand idle connections never
begin their handshake, and adds a client that stops in the middle of its
handshake and one that speaks plain HTTP to the TLS port (answered Go's 400).

Environment (set by test/integration/meson.build):
  TSM_BINARY      the tokenspeed-metrics executable
  TSM_JSONL_DIR   the build folder holding jsonl.so
  TSM_TEST_TMPDIR where temporary files go
"""
import json
import os
import resource
import shutil
import signal
import socket
import ssl
import threading
import time
import unittest

import simulate_harness as sh
from tls_material import TlsMaterial

IDLE_CONNECTIONS = 1000
SLOWLORIS_CONNECTIONS = 20
# What the launcher's resident memory may grow by while the clients attack:
# the endpoint holds at most max_connections (64) connections, each with a
# 17 KiB request buffer and one response.
RSS_GROWTH_LIMIT_KIB = 32 * 1024
# Hang guard of the well-behaved scraper's requests (not a timing assertion).
SCRAPE_GUARD_S = 20


def raise_fd_limit(wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connect(port, rcvbuf=None, context=None):
    """A connection to the endpoint; with context, TLS after the handshake."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(SCRAPE_GUARD_S)
    sock.connect(("127.0.0.1", port))
    if context is not None:
        sock = context.wrap_socket(sock, server_hostname="127.0.0.1")
    return sock


def read_until_closed(sock):
    chunks = []
    while True:
        try:
            chunk = sock.recv(65536)
        except (ConnectionResetError, socket.timeout, ssl.SSLError):
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def status_of(response):
    """The status code of the first response in raw bytes (0 when none)."""
    line = response.split(b"\r\n", 1)[0].split()
    return int(line[1]) if len(line) >= 2 and line[1].isdigit() else 0


def closed_by_server(sock):
    """True when the server has closed (EOF or reset) the connection."""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return True
    except (ConnectionResetError, ssl.SSLError):
        return True
    except socket.timeout:
        return False


class WellBehavedScraper(threading.Thread):
    """Scrapes /metrics on a fresh connection every 0.2 s and checks each
    answer: status 200 and an exposition whose engine counter never goes
    back. Failures are kept, not raised, for the test to report."""

    def __init__(self, url, context):
        super().__init__(daemon=True)
        self.url = url
        self.context = context
        self.stop = threading.Event()
        self.answered = 0
        self.failures = []
        self.last_tokens = 0.0

    def run(self):
        while not self.stop.is_set():
            try:
                status, body = sh.scrape(self.url, timeout=SCRAPE_GUARD_S, context=self.context)
                tokens = sh.sample_sum(body, "tokenspeed:generation_tokens_total")
                if status != 200 or "# TYPE tokenspeed:generation_tokens_total counter" not in body:
                    self.failures.append(f"status {status}, body {body[:200]!r}")
                elif tokens < self.last_tokens:
                    self.failures.append(f"generation tokens went back: {tokens}")
                else:
                    self.last_tokens = tokens
                    self.answered += 1
            except Exception as error:  # noqa: BLE001 — every failure is reported
                self.failures.append(repr(error))
            self.stop.wait(0.2)


class HostileClients(unittest.TestCase):
    maxDiff = None
    context = None  # the client's ssl.SSLContext when the endpoint serves TLS

    def endpoint_args(self):
        """The flags that configure the endpoint beyond its port."""
        return []

    def setUp(self):
        self.fd_limit = raise_fd_limit(IDLE_CONNECTIONS + SLOWLORIS_CONNECTIONS + 512)
        self.tmp = sh.make_tmp()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        config = os.path.join(self.tmp, "metrics.json")
        with open(config, "w") as file:
            json.dump({"jsonl": {"path": os.path.join(self.tmp, "events-{pid}.jsonl")}}, file)
        self.run_ = sh.Simulation(
            ["--enable-metrics", "--metrics-port", "0",
             "--metrics-reporters", "prometheus,jsonl", "--metrics-reporter-config", config,
             "--metrics-plugin-dir", os.environ["TSM_JSONL_DIR"],
             "--ranks", "1", "--duration", "0",
             # Rings a delivery thread starved of CPU by a busy machine cannot
             # overflow: a drop then means the endpoint's clients held the
             # engine up.
             "--metrics-reporter-queue-size", "262144", *self.endpoint_args()])
        self.sockets = []

    def tearDown(self):
        for sock in self.sockets:
            sock.close()
        self.run_.kill()

    def open(self, port, rcvbuf=None):
        """A connection that speaks HTTP (over TLS when the endpoint serves it)."""
        sock = connect(port, rcvbuf, self.context)
        self.sockets.append(sock)
        return sock

    def open_tcp(self, port):
        """A bare TCP connection: over TLS, one that never begins its handshake."""
        sock = connect(port)
        self.sockets.append(sock)
        return sock

    def scrape(self, url):
        return sh.scrape(url, context=self.context)

    def closed_total(self, url, reason):
        return sh.sample_sum(self.scrape(url)[1],
                             "tokenspeed_metrics_endpoint_connections_closed_total", reason=reason)

    def tls_only_clients(self, port):
        """Over TLS: the clients that only TLS has (see HostileClientsOverTls)."""
        return {}

    def test_well_behaved_scrapes_keep_answering_while_hostile_clients_attack(self):
        self.assertGreaterEqual(self.fd_limit, IDLE_CONNECTIONS + SLOWLORIS_CONNECTIONS + 100)
        url = self.run_.metrics_url()
        port = int(url.split(":")[2].split("/")[0])
        launcher = self.run_.process.pid
        # Warm up: the first scrapes, the producers' files, the rings.
        self.assertTrue(sh.eventually(
            lambda: sh.sample_sum(self.scrape(url)[1], "tokenspeed:generation_tokens_total") > 0,
            sh.STARTUP_TIMEOUT_S), self.run_.describe())
        rss_samples = [sh.rss_kib(launcher)]
        scraper = WellBehavedScraper(url, self.context)
        scraper.start()

        # A slow reader: 400 pipelined requests for the uncompressed exposition,
        # far more than the socket buffers hold, read one byte a second. The
        # server is left waiting inside a write, which write_timeout ends.
        slow = self.open(port, rcvbuf=4096)
        request = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        slow.sendall(request * 400)
        slow_reader_stop = threading.Event()
        slow_bytes = []

        def read_slowly():
            while not slow_reader_stop.is_set():
                try:
                    byte = slow.recv(1)
                except OSError:
                    return
                if not byte:
                    return
                slow_bytes.append(byte)
                slow_reader_stop.wait(1.0)

        slow_reader = threading.Thread(target=read_slowly, daemon=True)
        slow_reader.start()

        # Slowloris: request headers dribbled a byte at a time, never finished.
        slowloris = [self.open(port) for _ in range(SLOWLORIS_CONNECTIONS)]
        slowloris_stop = threading.Event()
        slowloris_cut = set()

        def dribble():
            header = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10000
            for at in range(len(header)):
                for index, sock in enumerate(slowloris):
                    if index in slowloris_cut:
                        continue
                    try:
                        sock.send(header[at:at + 1])
                    except OSError:
                        slowloris_cut.add(index)
                if slowloris_stop.wait(0.25) or len(slowloris_cut) == len(slowloris):
                    return

        dribbler = threading.Thread(target=dribble, daemon=True)
        dribbler.start()

        # Oversized headers (431), an oversized body (413), malformed requests (400).
        oversized = self.open(port)
        oversized.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 65536 + b"\r\n\r\n")
        self.assertEqual(status_of(read_until_closed(oversized)), 431)
        long_line = self.open(port)
        long_line.sendall(b"GET /" + b"c" * 65536 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(status_of(read_until_closed(long_line)), 431)
        body = self.open(port)
        body.sendall(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                     b"d" * 100000)
        self.assertEqual(status_of(read_until_closed(body)), 413)
        for garbage, status in ((b"\x00\x01\x02 nonsense\r\n\r\n", 400),
                                (b"GET /metrics HTTP/1.1\r\nHost x no colon\r\n\r\n", 400),
                                (b"GET /metrics HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
                                (b"GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                                 b"zz\r\n", 400),
                                (b"GET /metrics HTTP/7.3\r\nHost: x\r\n\r\n", 400),
                                (b"GET /metrics HTTP/1.2\r\nHost: x\r\n\r\n", 400)):
            malformed = self.open(port)
            malformed.sendall(garbage)
            self.assertEqual(status_of(read_until_closed(malformed)), status, garbage)

        # Pipelined requests: ten in one write, ten answers in order.
        pipelined = self.open(port)
        pipelined.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n" * 9 +
                          b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answers = read_until_closed(pipelined)
        self.assertEqual(answers.count(b"HTTP/1.1 200 OK\r\n"), 10, answers[:300])
        self.assertEqual(answers.count(b"# TYPE tokenspeed:generation_tokens_total counter"), 10)

        # Half-closed: a request then shutdown(SHUT_WR) is answered and closed;
        # a shutdown without a request is closed. (TCP's half-close: TLS has
        # none of its own.)
        if self.context is None:
            half = self.open(port)
            half.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            half.shutdown(socket.SHUT_WR)
            answer = read_until_closed(half)
            self.assertEqual(status_of(answer), 200)
            self.assertIn(b"# TYPE tokenspeed:generation_tokens_total counter", answer)
        silent = self.open_tcp(port)
        silent.shutdown(socket.SHUT_WR)
        self.assertTrue(closed_by_server(silent))
        tls_only = self.tls_only_clients(port)
        rss_samples.append(sh.rss_kib(launcher))

        # Slowloris ends at the read timeout (10 s from the first byte), or
        # earlier by eviction: either way the server closes every one.
        self.assertTrue(sh.eventually(lambda: len(slowloris_cut) == len(slowloris), 60, 0.5),
                        f"{len(slowloris_cut)} of {len(slowloris)} slowloris connections closed")
        slowloris_stop.set()
        dribbler.join()
        rss_samples.append(sh.rss_kib(launcher))
        timeouts_before_slow_reader = self.closed_total(url, "timeout")

        # A thousand idle connections: each new one at the limit evicts the
        # one idle longest, so the server keeps at most max_connections.
        idle = [self.open_tcp(port) for _ in range(IDLE_CONNECTIONS)]
        answered_before = scraper.answered
        self.assertTrue(sh.eventually(lambda: scraper.answered >= answered_before + 5, 60),
                        f"scraper: {scraper.answered} answered, failures {scraper.failures}")
        rss_samples.append(sh.rss_kib(launcher))
        exposition = self.scrape(url)[1]
        open_now = sh.sample_sum(exposition, "tokenspeed_metrics_endpoint_connections_open")
        self.assertLessEqual(open_now, 64 + 1, "more connections open than max_connections")
        evicted = sh.sample_sum(exposition, "tokenspeed_metrics_endpoint_connections_closed_total",
                                reason="evicted")
        self.assertGreaterEqual(evicted, IDLE_CONNECTIONS - 64)
        closed_idle = sum(1 for sock in idle[:IDLE_CONNECTIONS - 64] if closed_by_server(sock))
        self.assertEqual(closed_idle, IDLE_CONNECTIONS - 64)

        # The slow reader's response outlasts write_timeout (30 s): closed.
        self.assertTrue(sh.eventually(lambda: self.closed_total(url, "timeout") >
                                      timeouts_before_slow_reader, 90, 1.0),
                        "the slow reader was never disconnected")
        slow_reader_stop.set()
        slow_reader.join()
        self.assertTrue(slow_bytes and b"".join(slow_bytes).startswith(b"HTTP/1.1 200"))
        rss_samples.append(sh.rss_kib(launcher))

        scraper.stop.set()
        scraper.join()
        self.assertEqual(scraper.failures, [])
        self.assertGreater(scraper.answered, 20)
        self.assertLess(max(rss_samples) - rss_samples[0], RSS_GROWTH_LIMIT_KIB, rss_samples)
        counted = {reason: self.closed_total(url, reason)
                   for reason in ("rejected", "evicted", "idle_timeout", "timeout", "oversized",
                                  "bad_request", "tls_handshake")}
        self.assertGreaterEqual(counted["oversized"], 3, counted)
        self.assertGreaterEqual(counted["bad_request"], 6, counted)
        for what, check in tls_only.items():
            self.assertTrue(check(counted), f"{what}: {counted}")
        print(f"RSS of the launcher (KiB): {rss_samples}")
        print(f"closed by the endpoint: {counted}; well-behaved scrapes answered: "
              f"{scraper.answered}")

        # The engine's record path: every event delivered, none dropped.
        self.run_.process.send_signal(signal.SIGTERM)
        self.assertEqual(self.run_.wait(), 0, self.run_.describe())
        table = self.run_.output_table("jsonl")
        self.assertEqual(len(table), 3, self.run_.describe())
        for process, (_, accepted, delivered, dropped, discarded, status) in table.items():
            self.assertEqual((accepted, dropped, discarded, status), (delivered, 0, 0, "ok"),
                             f"{process}\n{self.run_.describe()}")
            self.assertGreater(delivered, 0, process)


class HostileClientsOverTls(HostileClients):
    """The same clients against the endpoint serving TLS."""

    def setUp(self):
        self.material = TlsMaterial(os.path.join(sh.make_tmp(), "tls"))
        self.addCleanup(shutil.rmtree, os.path.dirname(self.material.dir), True)
        self.context = ssl.create_default_context(cafile=self.material.path("ca.crt"))
        super().setUp()

    def endpoint_args(self):
        web_config = os.path.join(self.material.dir, "web.yml")
        with open(web_config, "w") as file:
            file.write(f"tls_server_config:\n  cert_file: {self.material.path('server.crt')}\n"
                       f"  key_file: {self.material.path('server.key')}\n")
        return ["--metrics-web-config", web_config]

    def tls_only_clients(self, port):
        # Half a ClientHello, then nothing: a slow client, closed at the
        # read timeout (10 s) like a slow request.
        stalled = self.open_tcp(port)
        stalled.settimeout(90)  # hang guard of the wait below
        stalled.sendall(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03")
        # Plain HTTP to the TLS port: the handshake fails, and the client is
        # told so in plain HTTP, as Go's server does, then closed.
        plain = self.open_tcp(port)
        plain.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertEqual(read_until_closed(plain),
                         b"HTTP/1.0 400 Bad Request\r\n\r\n"
                         b"Client sent an HTTP request to an HTTPS server.\n")
        self.assertTrue(closed_by_server(stalled), "the stalled handshake was never closed")
        # The idle connections closed during their handshake count as
        # evicted, not as failed handshakes.
        return {"stalled handshake closed at the read timeout": lambda c: c["timeout"] >= 1,
                "plain HTTP refused as a failed handshake": lambda c: 1 <= c["tls_handshake"] < 10}


if __name__ == "__main__":
    unittest.main()
