"""What writing the text as prometheus_client writes it costs
(docs/performance.md, "generate_latest in prometheus_client's spelling"):
one exposition of about 18,000 sample lines, timed three ways in one run.

    PYTHONPATH=host/python:build/host/python /usr/bin/python3 test/bench/python_exposition_bench.py

- raw: the host's own rendering of the node (`node_exposition()`, what its
  /metrics endpoint serves: Go's spelling, labels in definition order);
- re-rendered: `generate_latest(registry)` of tokenspeed_metrics.prometheus_client
  with a MultiProcessCollector (the raw text, re-spelled as prometheus_client
  writes it);
- prometheus_client 0.16's own multiprocess `generate_latest` of the same
  series (its files merged on each call).

Each side records the series in a launcher process of its own (tokenspeed_metrics
with start(), prometheus_client with PROMETHEUS_MULTIPROC_DIR), then times
REPEATS calls; the figures are the median and the best, in milliseconds per
exposition. Asserts nothing about time."""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPEATS = 15
COUNTER_SERIES = 4000
GAUGE_SERIES = 1000
HISTOGRAM_SERIES = 760  # 15 buckets + _sum + _count each: 12,920 lines


def record(pc):
    requests = pc.Counter("bench:requests", "Requests.", ["model", "route"])
    running = pc.Gauge("bench:running", "Running.", ["model"], multiprocess_mode="livesum")
    latency = pc.Histogram("bench:latency_seconds", "Latency.", ["model"])
    for i in range(COUNTER_SERIES):
        requests.labels("model-%d" % (i % 40), "/route/%d" % i).inc(1.5)
    for i in range(GAUGE_SERIES):
        running.labels("model-%d" % i).set(i)
    for i in range(HISTOGRAM_SERIES):
        latency.labels("model-%d" % i).observe(0.001 * i)


def timed(call):
    """(median, best) ms of REPEATS calls, and the last result."""
    times, result = [], None
    for _ in range(REPEATS):
        started = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), min(times), result


def sample_lines(text):
    return sum(1 for line in text.splitlines() if line and not line.startswith("#"))


def ours(workdir):
    import tokenspeed_metrics
    from tokenspeed_metrics import prometheus_client as pc
    from tokenspeed_metrics.prometheus_client import _node, multiprocess
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", workdir])
    record(pc)
    merged = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(merged)
    raw_median, raw_best, raw = timed(_node.node_exposition)
    median, best, text = timed(lambda: pc.generate_latest(merged))
    figures = {"raw": [raw_median, raw_best, sample_lines(raw)],
               "re-rendered": [median, best, sample_lines(text.decode())]}
    tokenspeed_metrics.close()
    return figures


def reference():
    import prometheus_client as pc
    from prometheus_client import multiprocess
    record(pc)
    merged = pc.CollectorRegistry()
    multiprocess.MultiProcessCollector(merged)
    median, best, text = timed(lambda: pc.generate_latest(merged))
    return {"prometheus_client 0.16 multiprocess": [median, best, sample_lines(text.decode())]}


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        mode, workdir = sys.argv[2].split(":", 1)
        print(json.dumps(ours(workdir) if mode == "ours" else reference()))
        return
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    figures = {}
    with tempfile.TemporaryDirectory(prefix="tsm-exposition-bench-") as folder:
        os.chmod(folder, 0o755)
        for mode, env in (("ours", clean),
                          ("reference", dict(clean, PROMETHEUS_MULTIPROC_DIR=folder))):
            result = subprocess.run([sys.executable, __file__, "--child", "%s:%s" % (mode, folder)],
                                    capture_output=True, text=True, env=env, check=True)
            figures.update(json.loads(result.stdout))
    print("| one exposition | sample lines | median ms | best ms |")
    print("|---|---|---|---|")
    for name, (median, best, lines) in figures.items():
        print("| %s | %d | %.1f | %.1f |" % (name, lines, median, best))
    raw, ours_text = figures["raw"][0], figures["re-rendered"][0]
    theirs = figures["prometheus_client 0.16 multiprocess"][0]
    print()
    print("re-spelling: %.1f ms over the raw text (%.2f us per line); re-rendered is %.1fx "
          "faster than prometheus_client's multiprocess generate_latest"
          % (ours_text - raw, (ours_text - raw) * 1000 / figures["re-rendered"][2],
             theirs / ours_text))


if __name__ == "__main__":
    main()
