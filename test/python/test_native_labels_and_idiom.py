"""tokenspeed_metrics.prometheus_client's labels() and the batched idiom,
run natively: SGLang's labels(**self.labels) and its _sum/_buckets idiom run
no Python frame; the child of a repeated call is remembered, and never
returned stale (label values that change, the same dict changed in place, a
value whose str() changes); keywords and positional values give one child;
errors are prometheus_client 0.16's; the idiom's totals equal
prometheus_client 0.16's for the same calls, from several threads; a fork
rebinds the remembered children; after close() recording raises
ClosedError; refused series (past the bound) are not remembered; remove()
and clear() forget the remembered call.

Each case runs a launcher in a subprocess (start() is process-wide) and
compares with prometheus_client 0.16 run here, in its single-process mode
(the messages and the arithmetic are the same in both of its modes)."""
import inspect
import json
import math
import os
import subprocess
import sys
import threading

from prometheus_client import CollectorRegistry
from prometheus_client import Counter as ReferenceCounter
from prometheus_client import Histogram as ReferenceHistogram

TIMEOUT_S = 120  # hang guard only

PRELUDE = """
import json, os, sys, threading
import tokenspeed_metrics
import tokenspeed_metrics.prometheus_client as pc
tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                          "--metrics-multiproc-dir", sys.argv[1]] + sys.argv[2:])
def refused(call):
    try:
        call()
    except Exception as error:
        return "%s: %s" % (type(error).__name__, error)
    return "accepted"
def histogram_samples(name):
    [metric] = [m for m in pc.REGISTRY.collect() if m.name == name]
    return sorted([s.name, sorted([k, repr(float(v)) if k == "le" else v]
                                  for k, v in s.labels.items()), s.value]
                  for s in metric.samples)
"""


def run_launcher(workdir, body, flags=()):
    path = os.path.join(workdir, "program.py")
    with open(path, "w") as script:
        script.write(PRELUDE + body)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    result = subprocess.run([sys.executable, path, workdir, *flags], capture_output=True,
                            text=True, timeout=TIMEOUT_S, env=env, check=False)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def refused(call):
    try:
        call()
    except Exception as error:  # noqa: BLE001 - the message is what is compared
        return "%s: %s" % (type(error).__name__, error)
    return "accepted"


def test_sglangs_recording_calls_and_the_idiom_run_no_python_frame(workdir):
    [calls] = run_launcher(workdir, """
labels = {"model_name": "m", "tp_rank": 0}
g = pc.Gauge("c:running", "R.", list(labels), multiprocess_mode="mostrecent")
c = pc.Counter("c:tokens_total", "T.", list(labels))
h = pc.Histogram("c:itl_seconds", "ITL.", list(labels), buckets=[0.01, 0.02, 0.04])
for _ in range(2):  # the first round makes the children
    frames = []
    def profile(frame, event, arg):
        if event == "call":
            frames.append(frame.f_code.co_name)
    sys.setprofile(profile)
    g.labels(**labels).set(3)
    c.labels(**labels).inc(2)
    h.labels(**labels).observe(0.015)
    his = h.labels(**labels)
    his._sum.inc(0.06)
    for i, bound in enumerate(his._upper_bounds):
        if 0.06 / 2 <= bound:
            his._buckets[i].inc(2)
            break
    sys.setprofile(None)
print(json.dumps(frames))
""")
    assert calls == []


def test_the_remembered_child_follows_changed_values_and_the_same_dict_changed_in_place(workdir):
    [values] = run_launcher(workdir, """
class Name:  # a label value whose str() changes
    def __init__(self, text): self.text = text
    def __str__(self): return self.text
c = pc.Counter("c:requests", "R.", ["model", "rank"])
d = {"model": "a", "rank": 0}
c.labels(**d).inc(1)                  # a,0
c.labels(**d).inc(1)                  # a,0 again: the remembered call
d["model"] = "b"
c.labels(**d).inc(10)                 # b,0: the same dict, one value replaced
d["rank"] = 1
c.labels(**d).inc(100)                # b,1
d["model"] = "a"; d["rank"] = 0
c.labels(**d).inc(1000)               # a,0 with values equal to the first call's
name = Name("x")
c.labels(model=name, rank=0).inc(10000)
name.text = "y"
c.labels(model=name, rank=0).inc(100000)    # the same object, another str()
rank = [0]
c.labels(model="z", rank=rank).inc(1)
rank[0] = 1
c.labels(model="z", rank=rank).inc(2)       # a list changed in place
for model, rank in (("p", 0), ("q", 0), ("p", 0), ("q", 0)):   # alternating
    c.labels(model=model, rank=rank).inc(1)
print(json.dumps(sorted([list(key), child.get()] for key, child in c._children.items())))
""")
    assert values == [[["a", "0"], 1002.0], [["b", "0"], 10.0], [["b", "1"], 100.0],
                      [["p", "0"], 2.0], [["q", "0"], 2.0], [["x", "0"], 10000.0],
                      [["y", "0"], 100000.0], [["z", "[0]"], 1.0], [["z", "[1]"], 2.0]]


def test_keywords_and_positional_values_give_one_child_in_every_label_order(workdir):
    [same] = run_launcher(workdir, """
c = pc.Counter("c:events", "E.", ["event", "tp_rank"])
s = pc.Counter("c:kv_events", "KV.", {"tp_rank", "event", "dp_rank"})
by_name = {"event": "stored", "tp_rank": 0, "dp_rank": 1}
positional = tuple(by_name[name] for name in s._labelnames)   # the set's order here
same = [c.labels(event="stored", tp_rank=0) is c.labels("stored", "0"),
        c.labels(tp_rank="0", event="stored") is c.labels("stored", 0),
        s.labels(**by_name) is s.labels(*positional),
        s.labels(*positional)._labelvalues == tuple(str(v) for v in positional)]
s.labels(*positional).inc(4)
s.remove(*positional)
same.append(list(s._children) == [])
print(json.dumps(same))
""")
    assert same == [True, True, True, True, True]


# Calls on c = Counter("c:calls", "C.", ["a", "b"]) and p = Counter("c:plain", "P.").
ERROR_CALLS = ["c.labels()", 'c.labels("1")', 'c.labels("1", "2", "3")', 'c.labels(a="1")',
               'c.labels(a="1", c="2")', 'c.labels(a="1", b="2", c="3")', 'c.labels("1", b="2")',
               'p.labels("1")', 'c.labels("1", "2").labels("3")', "c.inc()"]


def test_errors_are_prometheus_clients_and_leave_the_remembered_call_intact(workdir):
    [ours] = run_launcher(workdir, """
c = pc.Counter("c:calls", "C.", ["a", "b"])
p = pc.Counter("c:plain", "P.")
d = {"a": "1", "b": "2"}
child = c.labels(**d)
messages = [refused(lambda: eval(call)) for call in %r]
print(json.dumps([messages, c.labels(**d) is child]))
""" % ERROR_CALLS)
    registry = CollectorRegistry()
    families = {"c": ReferenceCounter("c:calls", "C.", ["a", "b"], registry=registry),
                "p": ReferenceCounter("c:plain", "P.", registry=registry)}
    expected = [refused(lambda: eval(call, families)) for call in ERROR_CALLS]  # noqa: S307
    assert ours == [expected, True]
    assert expected[3] == "ValueError: Incorrect label names"  # the reference raised


# (interval, tokens) pairs: bucket edges, the +Inf bucket, a float count.
IDIOM_CALLS = [(0.02, 2), (0.04, 4), (0.03, 1), (0.5, 5), (7.0, 1), (0.0, 3), (0.06, 2.0),
               (1e-9, 7), (0.0300000001, 3), (100.0, 2)]
IDIOM_BUCKETS = [0.01, 0.02, 0.03, 0.1, 1.0]


def sglang_idiom(his, interval, tokens):
    adjusted = interval / tokens
    his._sum.inc(interval)
    for i, bound in enumerate(his._upper_bounds):
        if adjusted <= bound:
            his._buckets[i].inc(tokens)
            break


# The idiom as the scripts the launcher runs define it: the same function.
SGLANG_IDIOM_SOURCE = inspect.getsource(sglang_idiom)


def reference_samples(histogram):
    [metric] = [m for m in histogram.collect()]
    return sorted([s.name, sorted([k, repr(float(v)) if k == "le" else v]
                                  for k, v in s.labels.items()), s.value]
                  for s in metric.samples if not s.name.endswith("_created"))


def test_the_idiom_totals_equal_prometheus_clients_for_the_same_calls_from_several_threads(
        workdir):
    [ours] = run_launcher(workdir, """
CALLS = %r
%slabels = {"model_name": "m"}
h = pc.Histogram("c:itl_seconds", "ITL.", list(labels), buckets=%r)
plain = pc.Histogram("c:step_seconds", "Step.", buckets=%r)
def run():
    for interval, tokens in CALLS * 50:
        sglang_idiom(h.labels(**labels), interval, tokens)
        sglang_idiom(plain, interval, tokens)
threads = [threading.Thread(target=run) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
reads = [h.labels(**labels)._sum.get(), [b.get() for b in h.labels(**labels)._buckets],
         sum(b._value for b in plain._buckets)]
print(json.dumps([histogram_samples("c:itl_seconds"), histogram_samples("c:step_seconds"),
                  reads]))
""" % (IDIOM_CALLS, SGLANG_IDIOM_SOURCE, IDIOM_BUCKETS, IDIOM_BUCKETS))
    registry = CollectorRegistry()
    h = ReferenceHistogram("c:itl_seconds", "ITL.", ["model_name"], buckets=IDIOM_BUCKETS,
                           registry=registry)
    plain = ReferenceHistogram("c:step_seconds", "Step.", buckets=IDIOM_BUCKETS,
                               registry=registry)
    lock = threading.Lock()  # prometheus_client's _sum and _buckets[i] are separate values

    def run():
        for interval, tokens in IDIOM_CALLS * 50:
            with lock:
                sglang_idiom(h.labels(model_name="m"), interval, tokens)
                sglang_idiom(plain, interval, tokens)
    threads = [threading.Thread(target=run) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    want_labelled = reference_samples(h)
    want_plain = reference_samples(plain)
    got_labelled, got_plain, reads = ours
    for got, want in ((got_labelled, want_labelled), (got_plain, want_plain)):
        assert [row[:2] for row in got] == [row[:2] for row in want]
        for (name, _, value), (_, _, expected) in zip(got, want):
            if name.endswith("_sum"):  # four threads add in another order
                assert math.isclose(value, expected, rel_tol=1e-12), (value, expected)
            else:
                assert value == expected, (name, value, expected)
    reference_child = h.labels(model_name="m")
    assert math.isclose(reads[0], reference_child._sum.get(), rel_tol=1e-12)
    assert reads[1] == [b.get() for b in reference_child._buckets]
    assert reads[2] == sum(b.get() for b in plain._buckets)  # SGLang's straggler check's sum


def test_a_fork_rebinds_the_remembered_children_and_the_idioms_parts(workdir):
    [figures] = run_launcher(workdir, """
labels = {"model_name": "m", "tp_rank": 0}
c = pc.Counter("c:tokens", "T.", list(labels))
h = pc.Histogram("c:itl_seconds", "ITL.", list(labels), buckets=[0.01, 0.1])
child = c.labels(**labels)
child.inc(1)
his = h.labels(**labels)
his._sum.inc(0.02); his._buckets[1].inc(1)
pid = os.fork()
if pid == 0:
    code = 0
    try:
        same = c.labels(**labels) is child and h.labels(**labels) is his
        c.labels(**labels).inc(10)
        his = h.labels(**labels)
        his._sum.inc(0.5); his._buckets[2].inc(2)
        own = [c.labels(**labels)._value.get(), his._sum.get()]
        tokenspeed_metrics.close()
        code = 0 if same and own == [10.0, 0.5] else 3
    finally:
        os._exit(code)
_, status = os.waitpid(pid, 0)
c.labels(**labels).inc(100)
text = {"model_name": "m", "tp_rank": "0"}
print(json.dumps([os.waitstatus_to_exitcode(status),
                  pc.REGISTRY.get_sample_value("c:tokens_total", text),
                  pc.REGISTRY.get_sample_value("c:itl_seconds_count", text),
                  pc.REGISTRY.get_sample_value("c:itl_seconds_sum", text),
                  c.labels(**labels)._value.get()]))
""")
    exit_code, tokens, count, total, own = figures
    assert exit_code == 0  # in the child: the same objects, its own figures only
    assert tokens == 111.0  # the node merges the parent's 101 and the child's 10
    assert count == 3.0
    assert math.isclose(total, 0.52)
    assert own == 101.0


def test_after_close_remembered_and_new_children_raise_closed_error(workdir):
    [messages] = run_launcher(workdir, """
labels = {"model_name": "m"}
c = pc.Counter("c:tokens", "T.", list(labels))
h = pc.Histogram("c:itl_seconds", "ITL.", list(labels), buckets=[0.01, 0.1])
c.labels(**labels).inc()
his = h.labels(**labels)
tokenspeed_metrics.close()
his._sum.inc(0.02)
print(json.dumps([refused(lambda: c.labels(**labels).inc()),
                  refused(lambda: his._buckets[1].inc(1)),
                  refused(lambda: c.labels(model_name="new"))]))
""")
    assert all(m.startswith("ClosedError: ") for m in messages), messages


def test_refused_series_are_not_remembered_and_remove_and_clear_forget_the_call(workdir):
    [result] = run_launcher(workdir, """
c = pc.Counter("c:per_request", "R.", ["request"])
kept = [{"request": "r0"}, {"request": "r1"}]
for d in kept:
    c.labels(**d).inc()
over = {"request": "r2"}
refused_twice = c.labels(**over) is c.labels(**over)
c.labels(**over).inc()
first = c.labels(**kept[0])
remembered = c.labels(**kept[0]) is first
c.remove("r0")
after_remove = c.labels(**kept[0]) is first
second = c.labels(**kept[1])
c.clear()
after_clear = c.labels(**kept[1]) is second
print(json.dumps([refused_twice, remembered, after_remove, after_clear, sorted(c._children)]))
""", flags=["--metrics-max-series-per-family", "2"])
    assert result == [False, True, False, False, [["r1"]]]


def test_refused_histogram_children_go_at_once_and_kept_parts_outlive_their_child(workdir):
    [result] = run_launcher(workdir, """
import gc
h = pc.Histogram("c:itl_seconds", "ITL.", ["request"], buckets=[0.01, 0.1])
his = h.labels(request="r0")
parts = (his._sum, his._buckets)
gc.collect()
gc.disable()
for i in range(200):  # refused: a new child each time, with its _sum and _buckets
    refused_child = h.labels(request="r%d" % (i + 1))
    refused_child._sum.inc(0.02)
    refused_child._buckets[1].inc(1)
del refused_child
alive = sum(1 for o in gc.get_objects() if type(o).__name__ == "HistogramChild")
gc.enable()
h.remove("r0")
del his
gc.collect()
parts[0].inc(0.03)      # the child is gone: its parts record into its series
parts[1][1].inc(2)
labels = {"request": "r0"}
print(json.dumps([alive, pc.REGISTRY.get_sample_value("c:itl_seconds_count", labels),
                  pc.REGISTRY.get_sample_value("c:itl_seconds_sum", labels),
                  [b.get() for b in parts[1]], parts[0].get()]))
""", flags=["--metrics-max-series-per-family", "1"])
    alive, count, total, buckets, own_sum = result
    assert alive == 1  # r0's only: no refused child waits for the collector
    assert count == 2.0
    assert math.isclose(total, 0.03)
    assert buckets == [0.0, 2.0, 0.0]
    assert math.isclose(own_sum, 0.03)
