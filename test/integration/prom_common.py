"""Shared helpers of the Prometheus integration drivers: running the
prom-workload program, a real Prometheus scraping it, free ports, HTTP
fetches and queries, skipping (exit 77), and waiting for a condition
(eventually, of test/eventually.py)."""
import contextlib
import gzip
import json
import math
import os
import socket
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from eventually import eventually  # noqa: E402,F401

SKIP = 77


def skip(reason):
    print(f"SKIP: {reason}")
    sys.exit(SKIP)


def free_port():
    """A port free at the time of the call on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, timeout=30, gzip_ok=False):
    request = urllib.request.Request(url)
    if gzip_ok:
        request.add_header("Accept-Encoding", "gzip")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        body = response.read()
        if response.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return body.decode("utf-8")


def quote(value):
    return urllib.parse.quote(value, safe="")


class Workload:
    """prom-workload replay SCRIPT: producers forked, /metrics served."""

    def __init__(self, program, script_text):
        self.tmp = tempfile.TemporaryDirectory(prefix="tsm-it-")
        script = os.path.join(self.tmp.name, "script.txt")
        with open(script, "w") as f:
            f.write(script_text)
        self.base = os.path.join(self.tmp.name, "runs")
        self.proc = subprocess.Popen([program, "replay", script, self.base],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True)
        self.port = None
        self.pids = {}
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("prom-workload ended before it was ready")
            fields = line.split()
            if fields[0] == "port":
                self.port = int(fields[1])
            elif fields[0] == "pid":
                self.pids[int(fields[1])] = int(fields[2])
            elif fields[0] == "dir":
                self.run_dir = fields[1]
            elif fields[0] == "ready":
                break

    def url(self):
        return f"http://127.0.0.1:{self.port}/metrics"

    def command(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"prom-workload answered {answer!r} to {text!r}")

    def close(self):
        if self.proc.poll() is None:
            try:
                self.command("quit")
                self.proc.wait(timeout=30)
            except Exception:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        run_dir_left = os.path.exists(getattr(self, "run_dir", ""))
        self.tmp.cleanup()
        return code, run_dir_left


def query(base, expr):
    """The result of an instant query of the Prometheus at base."""
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    answer = json.loads(fetch(url))
    if answer.get("status") != "success":
        raise RuntimeError(f"query {expr}: {answer}")
    return answer["data"]["result"]


def instant_values(base, exprs):
    """Each expression's first sample value, for those that have one."""
    values = {}
    for expr in exprs:
        result = query(base, expr)
        if result:
            values[expr] = float(result[0]["value"][1])
    return values


def compare_values(values, expected, failures):
    """Prints each expected value beside the one queried (equal to a relative
    1e-9); an expression that differs or is missing joins failures."""
    for expr, want in expected.items():
        got = values.get(expr)
        ok = got is not None and math.isclose(got, want, rel_tol=1e-9)
        print(f"{'ok  ' if ok else 'FAIL'} {expr} = {got} (expected {want})")
        if not ok:
            failures.append(expr)


class PrometheusServer:
    """A real Prometheus on loopback (its own configuration, data directory
    and free port) scraping target ("host:port") every second, ready when
    made; stop() ends it."""

    def __init__(self, program, workdir, target, extra_args=()):
        port = free_port()
        config = os.path.join(workdir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: tokenspeed
    static_configs:
      - targets: ['{target}']
""")
        self.log = open(os.path.join(workdir, "prometheus.log"), "w")
        self.proc = subprocess.Popen([program, f"--config.file={config}",
                                      f"--storage.tsdb.path={os.path.join(workdir, 'data')}",
                                      f"--web.listen-address=127.0.0.1:{port}", *extra_args],
                                     stdout=self.log, stderr=subprocess.STDOUT)
        self.base = f"http://127.0.0.1:{port}"

        def ready():
            if self.proc.poll() is not None:
                raise RuntimeError("prometheus exited before it was ready")
            try:
                fetch(self.base + "/-/ready", timeout=2)
                return True
            except Exception:
                return False

        if not eventually(ready, interval=0.2):
            self.stop()
            raise RuntimeError("prometheus did not become ready")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Ended:
    """How a scraped workload ended: its exit status, and whether its run
    directory was left behind (filled in once both processes stopped)."""
    code = None
    run_dir_left = False


@contextlib.contextmanager
def scraped_workload(prometheus, program, script, prometheus_args=()):
    """prom-workload replaying script, scraped every second by a real
    Prometheus (prometheus_args added to its command line). Yields
    (workload, server, ended); on the way out stops the server, closes the
    workload and fills in ended, whatever happened inside."""
    tmp = tempfile.TemporaryDirectory(prefix="tsm-prometheus-")
    workload = Workload(program, script)
    server = None
    ended = Ended()
    try:
        server = PrometheusServer(prometheus, tmp.name, f"127.0.0.1:{workload.port}",
                                  prometheus_args)
        yield workload, server, ended
    finally:
        if server is not None:
            server.stop()
        ended.code, ended.run_dir_left = workload.close()
        tmp.cleanup()


def verdict(failures, ended, run_dir_removed=False):
    """Prints PASS or FAIL and returns the exit status: failures, a workload
    that did not exit 0, or (run_dir_removed) one that left its run
    directory, fail."""
    if ended.code != 0:
        failures.append(f"prom-workload exit status {ended.code}")
    if run_dir_removed and ended.run_dir_left:
        failures.append("the run directory was not removed on normal exit")
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0
