"""statsd_common.py — what the statsd tests share: the real StatsD server
(npm statsd 0.9.0 in test/statsd_server) and its admin port, a DogStatsD
receiver owned by the test (UDP or unixgram) that checks every datagram, one
`simulate` run with prometheus and statsd, and the Prometheus scrape. Starts
only processes it stops again; binds 127.0.0.1 only.

Environment (set by test/integration/meson.build):
  TSM_BINARY          the tokenspeed-metrics executable
  TSM_STATSD_DIR      the build folder holding statsd.so
  TSM_STATSD_SERVER   test/statsd_server (its node_modules inside)
  TSM_NODE            the node executable
  TSM_TEST_TMPDIR     where temporary files go
"""
import json
import math
import os
import re
import socket
import subprocess
import sys
import threading

import simulate_harness
# Also used by the tests through this module.
from simulate_harness import (  # noqa: F401
    EXIT_TIMEOUT_S, STARTUP_TIMEOUT_S, eventually, free_port, make_tmp)

STATSD_DIR = os.environ["TSM_STATSD_DIR"]
SERVER_DIR = os.environ["TSM_STATSD_SERVER"]
NODE = os.environ.get("TSM_NODE", "node")


def scrape(url):
    return simulate_harness.scrape(url)[1]


def prometheus_samples(text):
    """{(sample name, frozenset(labels)): value} of the engine's series."""
    from prometheus_client.parser import text_string_to_metric_families
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("tokenspeed:"):
                out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def segment(text):
    """A label value as the statsd flavour writes it into a name segment."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def statsd_key_to_series(key):
    """'tokenspeed.NAME.l1.v1.l2.v2' -> ('tokenspeed:NAME', frozenset labels)."""
    parts = key.split(".")
    if len(parts) < 2 or len(parts) % 2 != 0 or parts[0] != "tokenspeed":
        raise AssertionError(f"not a name this output writes: {key!r}")
    labels = frozenset(zip(parts[2::2], parts[3::2]))
    return "tokenspeed:" + parts[1], labels


def plain_key(name, labels):
    """The plain flavour's key of an engine series: the name with ':' as '.',
    then its (sanitized) labels as segments in the catalog's label order."""
    order = {"model_name": 0, "app_key": 1, "dp_rank": 2}
    parts = [name.replace(":", ".")]
    for label, value in sorted(labels, key=lambda item: order.get(item[0], 9)):
        parts += [label, value]
    return ".".join(parts)


def sanitized(labels):
    return frozenset((name, segment(value)) for name, value in labels)


def skip_unless_server_installed():
    stats_js = os.path.join(SERVER_DIR, "node_modules", "statsd", "stats.js")
    if not os.path.isfile(stats_js):
        print(f"skipped: {stats_js} is missing (run npm ci in {SERVER_DIR})")
        sys.exit(77)


class StatsdServer:
    """The real StatsD server on a UDP port, its admin port polled for state.
    Its flush interval is an hour: everything received stays readable."""

    def __init__(self, tmp):
        self.port = free_port(socket.SOCK_DGRAM)
        self.admin_port = free_port()
        config = os.path.join(tmp, "statsd-config.js")
        with open(config, "w") as file:
            file.write("module.exports = " + json.dumps({
                "address": "127.0.0.1", "port": self.port,
                "mgmt_address": "127.0.0.1", "mgmt_port": self.admin_port,
                "backends": ["./backends/console"], "flushInterval": 3600000,
                "servers": [{"server": os.path.join(SERVER_DIR, "udp_server.js"),
                             "address": "127.0.0.1", "port": self.port}]}) + ";\n")
        self.process = subprocess.Popen(
            [NODE, os.path.join(SERVER_DIR, "node_modules", "statsd", "stats.js"), config],
            cwd=os.path.join(SERVER_DIR, "node_modules", "statsd"),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ready = eventually(self._ready, STARTUP_TIMEOUT_S)
        if not ready:
            self.stop()
            raise AssertionError("the StatsD server did not start")

    def _ready(self):
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.sendto(b"probe.ready:1|c", ("127.0.0.1", self.port))
            return "probe.ready" in self.command("counters")
        except OSError:
            return False

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def command(self, name):
        with socket.create_connection(("127.0.0.1", self.admin_port), timeout=10) as admin:
            admin.sendall(name.encode() + b"\n")
            data = b""
            while not data.endswith(b"END\n\n"):
                chunk = admin.recv(65536)
                if not chunk:
                    break
                data += chunk
        return data.decode()

    def numbers(self, name):
        """counters or gauges: {key: value} (Node inspect text)."""
        text = self.command(name)
        return {key: float(value) for key, value in
                re.findall(r"'?([A-Za-z0-9_.;=-]+)'?: (-?[0-9.e+-]+|NaN|Infinity)", text)}

    def timer_counts(self):
        """timers: {key: (number of values, their sum or None when inspect cut the list)}."""
        text = self.command("timers")
        out = {}
        for key, body in re.findall(r"'?([A-Za-z0-9_.;=-]+)'?: \[(.*?)\]", text, re.S):
            more = re.search(r"\.\.\. (\d+) more items?", body)
            values = [float(v) for v in re.findall(r"-?[0-9][0-9.e+-]*", re.sub(
                r"\.\.\. \d+ more items?", "", body))]
            count = len(values) + (int(more.group(1)) if more else 0)
            out[key] = (count, None if more else sum(values))
        return out

    def kernel_drops(self):
        """Datagrams the kernel dropped on the server's socket (its receive
        buffer was full: the server fell behind), from /proc/net/udp."""
        with open("/proc/net/udp") as table:
            for line in table.readlines()[1:]:
                fields = line.split()
                if int(fields[1].split(":")[1], 16) == self.port:
                    return int(fields[-1])
        return 0

    def stop(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


LINE = re.compile(r"^(?P<name>[A-Za-z0-9_.-]+):(?P<value>-?[0-9][0-9.e+-]*)\|(?P<type>c|g|d)"
                  r"(?:\|@(?P<rate>[0-9][0-9.e-]*))?(?:\|#(?P<tags>[^|]*))?$")


class DogstatsdReceiver:
    """Receives datagrams on UDP or a unixgram path on a thread and parses
    every line; what does not parse is kept in errors."""

    def __init__(self, unix_path=None, max_bytes=None):
        self.unix_path = unix_path
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.lines = []
        self.errors = []
        self.datagrams = 0
        self.largest = 0
        self.reading = threading.Event()
        self.reading.set()
        self.sock = None
        self.open()

    def open(self):
        if self.unix_path:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.sock.bind(self.unix_path)
        else:
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.bind(("127.0.0.1", 0))
        # Room for a flush's burst while the reading thread catches up.
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.sock.settimeout(0.1)
        self.running = True
        self.thread = threading.Thread(target=self._run, args=(self.sock,), daemon=True)
        self.thread.start()

    @property
    def address(self):
        if self.unix_path:
            return "unix://" + self.unix_path
        return f"127.0.0.1:{self.sock.getsockname()[1]}"

    def _run(self, sock):
        while self.running:
            if not self.reading.wait(0.05):  # paused: the socket's buffer fills
                continue
            try:
                data = sock.recv(1 << 17)
            except socket.timeout:
                continue
            except OSError:
                return
            self._parse(data)

    def _parse(self, data):
        with self.lock:
            self.datagrams += 1
            self.largest = max(self.largest, len(data))
            if self.max_bytes is not None and len(data) > self.max_bytes:
                self.errors.append(f"datagram of {len(data)} bytes")
            for text in data.decode().split("\n"):
                match = LINE.match(text)
                if not match:
                    self.errors.append(f"bad line {text!r}")
                    continue
                tags = {}
                for tag in (match["tags"] or "").split(",") if match["tags"] else []:
                    if ":" not in tag:
                        self.errors.append(f"bad tag {tag!r} in {text!r}")
                        continue
                    name, value = tag.split(":", 1)
                    tags[name] = value
                rate = float(match["rate"]) if match["rate"] else 1.0
                if match["rate"] and match["type"] != "d":
                    self.errors.append(f"sample rate on a {match['type']}: {text!r}")
                self.lines.append((match["name"], float(match["value"]), match["type"],
                                   int(1 / rate), tags))

    def close(self):
        """Stops reading and removes the socket (a Unix path disappears)."""
        self.running = False
        self.thread.join(5)
        self.sock.close()
        if self.unix_path and os.path.exists(self.unix_path):
            os.unlink(self.unix_path)

    def snapshot(self):
        with self.lock:
            return list(self.lines), list(self.errors), self.datagrams


class Simulation(simulate_harness.OutputSimulation):
    """One `simulate` process with prometheus and statsd (settings: the statsd
    output's settings object)."""

    def __init__(self, tmp, settings, *args):
        super().__init__(tmp, "statsd", settings, STATSD_DIR, *args)

    def output_rows(self):
        """{process: [accepted, delivered, dropped, discarded, status]} of the statsd output."""
        return self.output_fields("statsd")


def isclose(a, b):
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
