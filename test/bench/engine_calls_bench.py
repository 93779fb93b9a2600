"""The recording calls of SGLang's and vLLM's metrics code, timed on
prometheus_client's multiprocess mode (the mode both engines run) and on
tokenspeed_metrics.prometheus_client, side by side in one run
(docs/performance.md, "Engine call shapes (SGLang, vLLM)"). A benchmark, not
a test: it prints ns per call and the ratio of each shape, and asserts
nothing. Run with Debian's interpreter (prometheus_client 0.16), the package
and the extension on PYTHONPATH:

    PYTHONPATH=host/python:build/host/python /usr/bin/python3 test/bench/engine_calls_bench.py

The shapes, each written as the engine writes it:
- SGLang records per call through labels(**self.labels) with the same dict
  every time (2 labels: model_name and one rank; 6: the scheduler's full
  set): gauge .set(x), counter .inc(n), histogram .observe(x);
- SGLang's batched inter-token-latency idiom: _sum.inc(interval), then a
  Python loop over _upper_bounds (23 bounds) to one _buckets[i].inc(n);
- vLLM keeps the children labels(*values) returns, once per engine, and
  records on them: counter .inc(n), gauge .set(x), histogram .observe(x).

The "engine's own Python" row runs the idiom's function with the cheapest
stand-ins a C call can be (labels a dict lookup, inc the builtin abs): the
cost of the engine's code itself, which no metrics library removes, and so
the bound on the idiom's ratio.

Each figure is the best of REPEATS timeit runs, in ns per call (--json
prints the figures as one JSON object instead of the table). Each side
runs in a process of its own (prometheus_client reads
PROMETHEUS_MULTIPROC_DIR at import; tokenspeed_metrics.start() is
process-wide), and the sides take turns run by run, so that a machine
shared with other work slows both alike."""
import json
import os
import subprocess
import sys
import tempfile
import timeit

N = 50_000
REPEATS = 15

LABELS_2 = {"model_name": "tiny-qwen", "tp_rank": 0}
LABELS_6 = {"model_name": "tiny-qwen", "engine_type": "unified", "tp_rank": 0, "pp_rank": 0,
            "dp_rank": 0, "moe_ep_rank": 0}
# SGLang's inter-token-latency buckets (23 bounds).
ITL_BUCKETS = [0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
               0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000,
               8.000]
# Intervals of 4 tokens landing in buckets 1 to 15 (an engine's decode
# steps), cycled by the idiom's row.
ITL_INTERVALS = [4 * v for v in (0.003, 0.007, 0.012, 0.018, 0.027, 0.045, 0.09, 0.3)]


def observe_inter_token_latency(histogram, labels, interval, num_new_tokens):
    """SGLang's TokenizerMetricsCollector.observe_inter_token_latency, as it
    is written there (its metrics object passed in)."""
    adjusted_interval = interval / num_new_tokens
    his = histogram.labels(**labels)
    his._sum.inc(interval)
    for i, bound in enumerate(his._upper_bounds):
        if adjusted_interval <= bound:
            his._buckets[i].inc(num_new_tokens)
            break


class Shape:
    """One call shape: statement run number times in namespace, per calls
    each time."""

    def __init__(self, statement, namespace, number=N, per=1):
        self.statement, self.namespace, self.number, self.per = statement, namespace, number, per

    def time_ns(self):
        """ns per call of one timeit run."""
        seconds = timeit.timeit(self.statement, globals=self.namespace, number=self.number)
        return seconds / self.number / self.per * 1e9


def shapes(pc, gauge_mode):
    """{name: Shape} with pc the prometheus_client module to time."""
    timed = {}
    for labels in (LABELS_2, LABELS_6):
        n = len(labels)
        names = list(labels)
        gauge = pc.Gauge(f"bench:gauge_{n}", "G.", names, multiprocess_mode=gauge_mode)
        counter = pc.Counter(f"bench:counter_{n}_total", "C.", names)
        histogram = pc.Histogram(f"bench:histogram_{n}_seconds", "H.", names,
                                 buckets=ITL_BUCKETS)
        ns = {"gauge": gauge, "counter": counter, "histogram": histogram, "labels": labels}
        timed[f"SGLang gauge labels(**{n} labels).set(x)"] = Shape(
            "gauge.labels(**labels).set(0.5)", ns)
        timed[f"SGLang counter labels(**{n} labels).inc(n)"] = Shape(
            "counter.labels(**labels).inc(3)", ns)
        timed[f"SGLang histogram labels(**{n} labels).observe(x)"] = Shape(
            "histogram.labels(**labels).observe(0.02)", ns)
    itl = pc.Histogram("bench:inter_token_latency_seconds", "ITL.", list(LABELS_2),
                       buckets=ITL_BUCKETS)
    ns = {"f": observe_inter_token_latency, "h": itl, "labels": LABELS_2,
          "intervals": ITL_INTERVALS}
    timed[IDIOM] = Shape("for v in intervals: f(h, labels, v, 4)", ns,
                         number=N // len(ITL_INTERVALS), per=len(ITL_INTERVALS))
    # vLLM: children made once per engine, recorded on ever after.
    values = ("tiny-qwen", "0")
    counter = pc.Counter("vllm:prompt_tokens_total", "P.", ["model_name", "engine"])
    gauge = pc.Gauge("vllm:num_requests_running", "R.", ["model_name", "engine"],
                     multiprocess_mode=gauge_mode)
    histogram = pc.Histogram("vllm:time_to_first_token_seconds", "T.", ["model_name", "engine"],
                             buckets=ITL_BUCKETS)
    ns = {"counter": {0: counter.labels(*values)}, "gauge": {0: gauge.labels(*values)},
          "histogram": {0: histogram.labels(*values)}}
    timed["vLLM cached child counter[e].inc(n)"] = Shape("counter[0].inc(17)", ns)
    timed["vLLM cached child gauge[e].set(x)"] = Shape("gauge[0].set(3)", ns)
    timed["vLLM cached child histogram[e].observe(x)"] = Shape("histogram[0].observe(0.02)", ns)
    return timed


IDIOM = "SGLang idiom: _sum.inc + loop over 23 bounds + _buckets[i].inc"
FLOOR = "engine's own Python: the idiom with one-C-call stand-ins"


def idiom_with_stand_ins(labels_call, his, labels, interval, num_new_tokens):
    """observe_inter_token_latency with its library calls made C calls that
    do nothing: labels_call(**labels) builds the keywords and calls a C
    function ("".format), his is the child the real code gets back."""
    adjusted_interval = interval / num_new_tokens
    labels_call(**labels)
    his._sum.inc(interval)
    for i, bound in enumerate(his._upper_bounds):
        if adjusted_interval <= bound:
            his._buckets[i].inc(num_new_tokens)
            break


def engine_floor():
    """The engine's own Python in the idiom: its function with stand-ins
    that cost one C call each (inc is the builtin abs)."""
    class Part:
        __slots__ = ("inc",)

        def __init__(self):
            self.inc = abs

    class Child:
        __slots__ = ("_sum", "_buckets", "_upper_bounds")

    child = Child()
    child._sum = Part()
    child._buckets = tuple(Part() for _ in range(len(ITL_BUCKETS) + 1))
    child._upper_bounds = ITL_BUCKETS + [float("inf")]
    ns = {"f": idiom_with_stand_ins, "call": "".format, "his": child, "labels": LABELS_2,
          "intervals": ITL_INTERVALS}
    return {FLOOR: Shape("for v in intervals: f(call, his, labels, v, 4)", ns,
                         number=N // len(ITL_INTERVALS), per=len(ITL_INTERVALS))}


def serve(side):
    """A side's process: prints its shape names (one JSON line), then times
    the shape named on each line of stdin once and prints ns per call."""
    if side == "prometheus_client":
        import prometheus_client as pc
        assert os.environ.get("PROMETHEUS_MULTIPROC_DIR"), "multiprocess mode only"
        # 0.16 has no mostrecent (0.18): max records alike for one process.
        timed = shapes(pc, "max")
    elif side == "engine":
        timed = engine_floor()
    else:
        import tokenspeed_metrics
        tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0"])
        from tokenspeed_metrics import prometheus_client as pc
        timed = shapes(pc, "mostrecent")  # SGLang's mode for its gauges
    print(json.dumps(list(timed)), flush=True)
    for line in sys.stdin:
        print(json.dumps(timed[line.strip()].time_ns()), flush=True)


class Side:
    """A side's serving process."""

    def __init__(self, name, env):
        self.name = name
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", name], env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.shapes = self._answer()

    def _answer(self):
        line = self.process.stdout.readline()
        if not line:
            sys.exit("%s failed (its stderr is above)" % self.name)
        return json.loads(line)

    def time_ns(self, shape):
        self.process.stdin.write(shape + "\n")
        self.process.stdin.flush()
        return self._answer()

    def close(self):
        self.process.stdin.close()
        self.process.wait()


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(sys.argv[2])
        return
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as multiproc:
        sides = [Side("prometheus_client", dict(clean, PROMETHEUS_MULTIPROC_DIR=multiproc)),
                 Side("tokenspeed_metrics", clean), Side("engine", clean)]
        # The sides take turns, run by run, so that all see the same
        # machine (the engine's own Python beside the idiom); each keeps its
        # best run.
        figures = {side.name: {} for side in sides}
        for shape in sides[0].shapes:
            for _ in range(REPEATS):
                for side in sides:
                    name = shape if shape in side.shapes else {IDIOM: FLOOR}.get(shape)
                    if name in side.shapes:
                        ns = side.time_ns(name)
                        figures[side.name][name] = min(figures[side.name].get(name, ns), ns)
        for side in sides:
            side.close()
    load_after = os.getloadavg()
    if "--json" in sys.argv[1:]:
        print(json.dumps(dict(figures, load=[load_before, load_after])))
        return
    reference, ours = figures["prometheus_client"], figures["tokenspeed_metrics"]
    width = max(len(shape) for shape in reference)
    print("| call shape | prometheus_client 0.16 multiprocess (ns) | "
          "tokenspeed_metrics.prometheus_client (ns) | ratio |")
    print("|---|---|---|---|")
    for shape, theirs in reference.items():
        print(f"| {shape:<{width}} | {theirs:8.1f} | {ours[shape]:7.1f} | "
              f"{theirs / ours[shape]:5.1f}x |")
    for shape, ns in figures["engine"].items():
        print(f"| {shape:<{width}} | - | {ns:7.1f} | cap {reference[IDIOM] / ns:5.1f}x |")
    print()
    print("load average %.2f %.2f %.2f before, %.2f %.2f %.2f after" % (load_before + load_after))


if __name__ == "__main__":
    main()
