"""zmq_load_common.py — what the zmq_load tests share: zmq-load-driver (the
sink driven from stdin lines, see zmq_load_driver.cpp), a SUB socket of
python3-zmq that keeps every message with its receipt time, and the
decoding of the frames with python3-msgpack. Starts only processes it stops
again; binds 127.0.0.1 only.

Environment (set by test/integration/meson.build):
  TSM_BINARY            the tokenspeed-metrics executable
  TSM_ZMQ_LOAD_DIR      the build folder holding zmq_load.so
  TSM_ZMQ_LOAD_DRIVER   the zmq-load-driver executable
  TSM_TEST_TMPDIR       where temporary files go
"""
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest

import simulate_harness
# Also used by the tests through this module.
from simulate_harness import (  # noqa: F401
    EXIT_TIMEOUT_S, STARTUP_TIMEOUT_S, eventually, make_tmp)

try:
    import msgpack
    import zmq
except ImportError as missing:
    print(f"skipped: {missing} (install python3-zmq and python3-msgpack)")
    sys.exit(77)

DRIVER = os.environ["TSM_ZMQ_LOAD_DRIVER"]
PLUGIN_DIR = os.environ["TSM_ZMQ_LOAD_DIR"]
# A hang guard for what a loaded machine may take to deliver one message.
RECEIVE_TIMEOUT_S = 30


def free_ports(count):
    """The first of count consecutive loopback ports nothing listens on now."""
    for _ in range(200):
        base = simulate_harness.free_port()
        if base + count > 65535:
            continue
        probes = []
        try:
            for port in range(base, base + count):
                probe = socket.socket()
                probes.append(probe)
                probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    raise AssertionError(f"no {count} consecutive free ports")


class Driver:
    """zmq-load-driver with options (a dict of --key value, map: a list of
    FIELD=FAMILY)."""

    def __init__(self, endpoint, **options):
        args = [DRIVER, "--endpoint", endpoint]
        for key, value in options.items():
            values = value if isinstance(value, list) else [value]
            for one in values:
                args += ["--" + key.replace("_", "-"), str(one)]
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)

    def command(self, line):
        """Sends one command; its answer lines (the last is "ok" or JSON)."""
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        lines = []
        while True:
            answer = self.process.stdout.readline()
            if not answer:
                raise AssertionError(f"the driver ended: {self.process.stderr.read()}")
            answer = answer.rstrip("\n")
            lines.append(answer)
            if answer == "ok" or answer.startswith("{"):
                return lines

    def set(self, family, value, **labels):
        self.command(" ".join(["set", family, repr(value)] + [f"{k}={v}" for k, v in
                                                            labels.items()]))

    def inc(self, family, value=1, **labels):
        self.command(" ".join(["inc", family, repr(value)] + [f"{k}={v}" for k, v in
                                                            labels.items()]))

    def figures(self):
        return json.loads(self.command("figures")[-1])

    def close(self):
        """Closes the sink; its last figures."""
        figures = json.loads(self.command("close")[-1])
        self.process.wait(EXIT_TIMEOUT_S)
        return figures

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()


class Subscriber:
    """A SUB socket of python3-zmq on endpoint, subscribed to every topic; a
    thread keeps (receipt monotonic ns, frames) of every message."""

    def __init__(self, endpoint, context=None):
        self.context = context or zmq.Context.instance()
        self.socket = self.context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.RCVHWM, 0)  # keep everything: the test reads it all
        self.socket.setsockopt(zmq.SUBSCRIBE, b"")
        self.socket.connect(endpoint)
        self.lock = threading.Lock()
        self.messages = []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        poller = zmq.Poller()
        poller.register(self.socket, zmq.POLLIN)
        while self.running:
            if not poller.poll(50):
                continue
            frames = self.socket.recv_multipart()
            received = time.monotonic_ns()
            with self.lock:
                self.messages.append((received, frames))

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def wait_for(self, condition, what, timeout=RECEIVE_TIMEOUT_S):
        """The messages once condition(messages) holds."""
        return eventually(lambda: condition(self.snapshot()) and self.snapshot(), timeout,
                          interval=0.02, what=what)

    def close(self):
        self.running = False
        self.thread.join(5)
        self.socket.close()


def sequence(frame):
    """The 8-byte big-endian sequence number of the second frame."""
    assert len(frame) == 8, frame
    return struct.unpack(">Q", frame)[0]


def payload(frames):
    return msgpack.unpackb(frames[2], raw=False)


def load_stats(messages):
    """The LoadStat payloads, decoded, in order of receipt."""
    return [payload(frames) for _, frames in messages]


class FeedCase(unittest.TestCase):
    """A test of the feed of one driver process: PORTS free ports from
    self.port (rank r publishes on port + r), the driver and the subscribers
    it makes ended after each test."""
    PORTS = 1

    def setUp(self):
        self.port = free_ports(self.PORTS)
        self.endpoint = f"tcp://127.0.0.1:{self.port}"

    def driver(self, **options):
        driver = Driver(self.endpoint, **options)
        self.addCleanup(driver.kill)
        return driver

    def subscriber(self, offset=0):
        sub = Subscriber(f"tcp://127.0.0.1:{self.port + offset}")
        self.addCleanup(sub.close)
        return sub
