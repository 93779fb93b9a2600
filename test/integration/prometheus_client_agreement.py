"""python3-prometheus-client in multiprocess mode (PROMETHEUS_MULTIPROC_DIR)
and our output are fed the same observations by two producer processes each
(counter increments, gauge sets in the livemax, livesum, max, min, all and
liveall modes, histogram observations including weighted ones, which the
Python side records as repeated observations); the scraped samples, parsed
with prometheus_client.parser, agree. Then one producer of each side is
killed (the Python side calls mark_process_dead, as its users must) and the
samples agree again: live gauges of the dead process gone, its counters and
histograms kept."""
import math
import os
import random
import signal
import sys
import tempfile

from prom_common import Workload, fetch, quote, skip

LABEL_ODD = 'we"ird\\va\nlue'
BUCKETS = [0.005, 0.01, 0.025, 0.1, 1.0]
GAUGE_MODES = ["livemax", "livesum", "max", "min", "all", "liveall"]


def build_script():
    """(metric definitions, operations) shared by both sides."""
    metrics = [("tokenspeed:requests", "counter", "livemax", ["model", "rank"], [], "Requests."),
               ("tokenspeed:latency_seconds", "histogram", "livemax", ["model"], BUCKETS,
                "Latency with a \\ backslash\nand a newline.")]
    for mode in GAUGE_MODES:
        metrics.append((f"tokenspeed:gauge_{mode}", "gauge", mode, ["model"], [], f"Gauge in {mode} mode."))
    rng = random.Random(4)
    ops = []
    for proc in (0, 1):
        for _ in range(40):
            model = rng.choice(["llama", "mistral", LABEL_ODD])
            ops.append((proc, "inc", "tokenspeed:requests", [model, str(rng.randint(0, 1))],
                        rng.choice([1, 2, 0.5, 7.25]), 1))
            ops.append((proc, "observe", "tokenspeed:latency_seconds", [model],
                        rng.choice([0.003, 0.01, 0.02, 0.5, 3.0]), rng.randint(1, 4)))
        for mode in GAUGE_MODES:
            for model in ("llama", LABEL_ODD):
                for _ in range(3):
                    ops.append((proc, "set", f"tokenspeed:gauge_{mode}", [model],
                                rng.choice([0, 1.5, 4, 10, 42.125]), 1))
    return metrics, ops


def script_text(metrics, ops):
    lines = []
    for name, kind, mode, labels, buckets, help_text in metrics:
        # The script carries help on one line: newlines and backslashes are
        # spelled out only on the Python side; ours gets the same text.
        lines.append(f"metric {name} {kind} {mode} {','.join(labels) or '-'} "
                     f"{','.join(repr(b) for b in buckets) or '-'} {help_text.replace(chr(10), ' ')}")
    for proc, op, name, values, value, weight in ops:
        lines.append(f"op {proc} {op} {name} {','.join(quote(v) for v in values) or '-'} {value!r} {weight}")
    return "\n".join(lines) + "\n"


def python_child(metrics, ops, proc, ready_w, release_r):
    from prometheus_client import Counter, Gauge, Histogram
    objects = {}
    for name, kind, mode, labels, buckets, help_text in metrics:
        help_text = help_text.replace("\n", " ")
        if kind == "counter":
            objects[name] = Counter(name, help_text, labels, registry=None)
        elif kind == "gauge":
            objects[name] = Gauge(name, help_text, labels, registry=None, multiprocess_mode=mode)
        else:
            objects[name] = Histogram(name, help_text, labels, registry=None, buckets=buckets)
    for p, op, name, values, value, weight in ops:
        if p != proc:
            continue
        child = objects[name].labels(*values)
        if op == "inc":
            child.inc(value)
        elif op == "set":
            child.set(value)
        else:
            for _ in range(weight):  # a weighted observation is weight observations
                child.observe(value)
    os.write(ready_w, b"r")
    os.read(release_r, 1)
    os._exit(0)


class PythonSide:
    def __init__(self, metrics, ops):
        self.children = {}
        for proc in (0, 1):
            ready_r, ready_w = os.pipe()
            release_r, release_w = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    for _, (_, other_release_w) in self.children.items():
                        os.close(other_release_w)  # only the parent may hold them
                    os.close(ready_r)
                    os.close(release_w)
                    python_child(metrics, ops, proc, ready_w, release_r)
                finally:
                    os._exit(1)
            os.close(ready_w)
            os.close(release_r)
            if os.read(ready_r, 1) != b"r":
                raise RuntimeError("python producer failed")
            os.close(ready_r)
            self.children[proc] = (pid, release_w)
        self.pids = {proc: pid for proc, (pid, _) in self.children.items()}

    def scrape(self):
        from prometheus_client import CollectorRegistry, generate_latest, multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry).decode("utf-8")

    def kill(self, proc):
        from prometheus_client import multiprocess
        pid, release_w = self.children.pop(proc)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(release_w)
        multiprocess.mark_process_dead(pid)

    def close(self):
        for pid, release_w in self.children.values():
            os.close(release_w)
            os.waitpid(pid, 0)
        self.children = {}


def samples(text, pids):
    """{(sample name, sorted labels): value} plus {family: type}."""
    from prometheus_client.parser import text_string_to_metric_families
    by_pid = {str(pid): f"producer{proc}" for proc, pid in pids.items()}
    out, types = {}, {}
    for family in text_string_to_metric_families(text):
        types[family.name] = family.type
        for sample in family.samples:
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = repr(float(labels["le"]))
            if "pid" in labels:
                labels["pid"] = by_pid.get(labels["pid"], "unknown-" + labels["pid"])
            out[(sample.name, tuple(sorted(labels.items())))] = sample.value
    return out, types


def compare(stage, ours_text, our_pids, theirs_text, their_pids):
    ours, our_types = samples(ours_text, our_pids)
    theirs, their_types = samples(theirs_text, their_pids)
    problems = []
    for key in sorted(set(ours) | set(theirs)):
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None or not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12):
            problems.append(f"{stage}: {key}: ours {a}, prometheus_client {b}")
    for name in sorted(set(our_types) | set(their_types)):
        if our_types.get(name) != their_types.get(name) and ours_has_samples(ours, name):
            problems.append(f"{stage}: family {name}: ours {our_types.get(name)}, "
                            f"prometheus_client {their_types.get(name)}")
    print(f"{stage}: {len(ours)} samples ours, {len(theirs)} prometheus_client, {len(problems)} differences")
    return problems


def ours_has_samples(samples_map, family):
    return any(name.startswith(family) for name, _ in samples_map)


def main():
    program = sys.argv[1]
    multiproc_dir = tempfile.TemporaryDirectory(prefix="tsm-pyclient-")
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = multiproc_dir.name
    try:
        import prometheus_client  # noqa: F401  (reads PROMETHEUS_MULTIPROC_DIR)
        from prometheus_client import multiprocess  # noqa: F401
    except ImportError:
        skip(f"python3-prometheus-client is not importable by {sys.executable}")

    metrics, ops = build_script()
    workload = Workload(program, script_text(metrics, ops))
    python = PythonSide(metrics, ops)
    problems = []
    try:
        problems += compare("all producers alive", fetch(workload.url(), gzip_ok=True), workload.pids,
                            python.scrape(), python.pids)
        workload.command("kill 1")
        python.kill(1)
        problems += compare("producer 1 killed", fetch(workload.url()), workload.pids,
                            python.scrape(), python.pids)
    finally:
        python.close()
        code, run_dir_left = workload.close()
        multiproc_dir.cleanup()
    if code != 0:
        problems.append(f"prom-workload exit status {code}")
    if run_dir_left:
        problems.append("the run directory was not removed on normal exit")
    for problem in problems:
        print("FAIL", problem)
    print("FAIL" if problems else "PASS")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
