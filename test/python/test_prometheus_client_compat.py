"""tokenspeed_metrics.prometheus_client as an engine's code uses it: what
differs from prometheus_client raises with a message naming what to use
instead; REGISTRY.collect() has prometheus_client's shape; unregister lets a
family be defined again; Info and Enum; time(), track_inprogress(),
count_exceptions(); start_http_server and make_wsgi_app served and scraped;
the gauge modes mostrecent and livemostrecent across processes; reads of a
child and REGISTRY in a producer give that process's own figures; exemplars
and set(value=...); the bound on series per family; mark_process_dead.

Each case runs a launcher in a subprocess (start() is process-wide), but
mark_process_dead's, which needs no node."""
import json
import os
import subprocess
import sys


TIMEOUT_S = 120  # hang guard only

PRELUDE = """
import os, sys, json
import tokenspeed_metrics
import tokenspeed_metrics.prometheus_client as pc
if __name__ == "__main__":  # the launcher; spawned producers import this as __mp_main__
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", sys.argv[1]] + sys.argv[2:])
def refused(call):
    try:
        call()
    except Exception as error:
        return "%s: %s" % (type(error).__name__, error)
    return "accepted"
"""


def run_launcher(workdir, body, flags=()):
    path = os.path.join(workdir, "program.py")
    with open(path, "w") as script:
        script.write(PRELUDE + body)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = subprocess.run([sys.executable, path, workdir, *flags], capture_output=True,
                            text=True, timeout=TIMEOUT_S, env=env, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_batched_idiom_out_of_pairing_raises_and_names_observe_with_weight(workdir):
    lines = run_launcher(workdir, """
h = pc.Histogram("c:itl_seconds", "ITL.", ["m"], buckets=[0.01, 0.1])
child = h.labels("x")
print(refused(lambda: child._buckets[0].inc(2)))
child._sum.inc(0.5)
print(refused(lambda: child._sum.inc(0.5)))        # the first 0.5 stays pending
print(refused(lambda: child._buckets[0].inc(2)))   # 0.25 each belongs in +Inf
child._sum.inc(0.02)
print(refused(lambda: child._buckets[1].inc(2.5)))
child._sum.inc(0.02)
child._buckets[0].inc(2)                            # 0.01 each: the first bucket
print([bucket._value for bucket in child._buckets], child._sum.get())
print(pc.generate_latest().decode())
""")
    assert lines[0].startswith("ValueError: histogram _buckets[0].inc() without a preceding "
                               "_sum.inc(total)")
    assert lines[1].startswith("ValueError: histogram _sum.inc() twice")
    assert lines[2].startswith("ValueError: histogram _buckets[0].inc(2) after _sum.inc(0.5)")
    assert "bucket 2" in lines[2]
    assert lines[3].startswith("ValueError: histogram _buckets[1].inc(2.5)")
    for line in lines[:4]:
        assert "use child.observe(value, weight)" in line
    assert lines[4] == "[2.0, 0.0, 0.0] 0.02"  # the refused batches left nothing behind
    assert 'c:itl_seconds_bucket{le="0.01",m="x"} 2.0' in lines
    assert 'c:itl_seconds_count{m="x"} 2.0' in lines
    assert 'c:itl_seconds_sum{m="x"} 0.02' in lines


def test_what_cannot_be_matched_raises_naming_what_to_use_instead(workdir):
    lines = run_launcher(workdir, """
g = pc.Gauge("c:g", "G.", ["a"])
print(refused(lambda: g.labels("1").set_function(lambda: 3)))
print(refused(lambda: pc.REGISTRY.register(object())))
print(refused(lambda: pc.Gauge("c:g", "Again.")))
print(refused(lambda: pc.Gauge("c:m", "M.", multiprocess_mode="median")))
print(refused(lambda: pc.push_to_gateway("localhost:9091", job="j", registry=pc.REGISTRY)))
print(refused(lambda: g.labels("1").labels("2")))
print(refused(lambda: pc.generate_latest(object())))
print(refused(lambda: pc.Enum("c:state", "State.", states=["a"])))
print(refused(lambda: g.labels("1")._value.set(3)))
""")
    assert lines[0].startswith("NotImplementedError: Gauge.set_function() is not offered")
    assert "call set(value)" in lines[0]
    # Not a collector: REGISTRY (auto_describe) calls its collect(), as prometheus_client's does.
    assert lines[1] == "AttributeError: 'object' object has no attribute 'collect'"
    assert lines[2] == "ValueError: Duplicated timeseries in CollectorRegistry: {'c:g'}"
    assert lines[3] == "ValueError: Invalid multiprocess mode: median"
    assert lines[4].startswith("NotImplementedError: the Pushgateway is not offered")
    assert "can not chain calls to .labels()" in lines[5]
    assert lines[6].startswith("TypeError: generate_latest() takes a CollectorRegistry")
    assert lines[7].startswith("ValueError: Enum c:state: its name is also the label of its "
                               "states")
    assert lines[8].startswith("NotImplementedError: tokenspeed_metrics.prometheus_client: a "
                               "child's _value (and a summary's _count, _sum) is read-only")


def test_registry_collect_has_prometheus_clients_shape_and_unregister_allows_a_new_family(
        workdir):
    lines = run_launcher(workdir, """
c = pc.Counter("c:requests_total", "Requests.", ["route"])
c.labels("/a").inc(3)
h = pc.Histogram("c:latency_seconds", "Latency.", buckets=[1, 10])
h.observe(0.5)
for metric in pc.REGISTRY.collect():
    print(json.dumps([metric.name, metric.type, metric.documentation,
                      [[s.name, s.labels, s.value] for s in metric.samples]]))
print(pc.REGISTRY.get_sample_value("c:requests_total", {"route": "/a"}))
pc.REGISTRY.unregister(c)
again = pc.Counter("c:requests", "Requests.", ["route"])
print(sorted(pc.REGISTRY._names_to_collectors))
""")
    rows = [eval(line.replace("null", "None")) for line in lines[:2]]  # noqa: S307 - our JSON
    # In the order of registration, as prometheus_client's registry collects.
    assert rows[0] == ["c:requests", "counter", "Requests.",
                       [["c:requests_total", {"route": "/a"}, 3.0]]]
    assert rows[1] == ["c:latency_seconds", "histogram", "Latency.", [
        ["c:latency_seconds_bucket", {"le": "1.0"}, 1.0],
        ["c:latency_seconds_bucket", {"le": "10.0"}, 1.0],
        ["c:latency_seconds_bucket", {"le": "+Inf"}, 1.0],
        ["c:latency_seconds_sum", {}, 0.5],
        ["c:latency_seconds_count", {}, 1.0]]]
    assert lines[2] == "3.0"
    assert lines[3] == str(sorted(
        ["c:latency_seconds", "c:latency_seconds_bucket", "c:latency_seconds_count",
         "c:latency_seconds_created", "c:latency_seconds_sum", "c:requests",
         "c:requests_created", "c:requests_total"]))


def test_info_enum_timers_and_disable_created_metrics(workdir):
    lines = run_launcher(workdir, """
import time
pc.disable_created_metrics()
info = pc.Info("c:build", "Build.")
info.info({"version": "1.2", "commit": "abc"})
print(refused(lambda: info.info({"version": "1.3", "commit": "abc"})))
state = pc.Enum("c_state", "State.", ["engine"], states=["starting", "running"])
state.labels("0").state("running")
busy = pc.Gauge("c:busy", "Busy.", multiprocess_mode="livesum")
seconds = pc.Histogram("c:step_seconds", "Step.", buckets=[60])
errors = pc.Counter("c:errors", "Errors.")
@busy.track_inprogress()
@seconds.time()
def step():
    with busy.track_inprogress():
        print("inside", pc.REGISTRY.get_sample_value("c:busy"))
@errors.count_exceptions(ValueError)
def fails():
    raise ValueError("x")
step()
print(refused(fails))
with pc.Gauge("c:last_seconds", "Last.").time():
    pass
print(pc.generate_latest().decode())
""")
    assert lines[0].startswith("ValueError: Info c:build: info() was already called")
    assert lines[1] == "inside 2.0"
    assert lines[2] == "ValueError: x"
    assert 'c:build_info{commit="abc",version="1.2"} 1.0' in lines
    assert 'c_state{c_state="running",engine="0"} 1.0' in lines  # labels sorted by name
    assert 'c_state{c_state="starting",engine="0"} 0.0' in lines
    assert "c:busy 0.0" in lines
    assert "c:step_seconds_count 1.0" in lines
    assert "c:errors_total 1.0" in lines
    assert any(line.startswith("c:last_seconds{pid=") for line in lines)  # mode all
    assert not any("_created" in line for line in lines)


def test_start_http_server_and_make_wsgi_app_serve_the_nodes_exposition(workdir):
    lines = run_launcher(workdir, """
import gzip, threading, urllib.request
from wsgiref.simple_server import make_server
pc.Counter("c:served", "Served.").inc(5)
server, thread = pc.start_http_server(0, addr="127.0.0.1")
with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % server.server_port, timeout=60) as r:
    print(r.headers["Content-Type"]); text = r.read().decode()
print("c:served_total 5.0" in text.splitlines())
registry = pc.CollectorRegistry()
pc.multiprocess.MultiProcessCollector(registry)
httpd = make_server("127.0.0.1", 0, pc.make_wsgi_app(registry))
threading.Thread(target=httpd.serve_forever, daemon=True).start()
request = urllib.request.Request("http://127.0.0.1:%d/" % httpd.server_port,
                                 headers={"Accept-Encoding": "gzip"})
with urllib.request.urlopen(request, timeout=60) as r:
    print(r.headers.get("Content-Encoding")); text = gzip.decompress(r.read()).decode()
print("c:served_total 5.0" in text.splitlines(), "tokenspeed_metrics_" in text)
pc.multiprocess.mark_process_dead(12345)
""")
    assert lines == ["text/plain; version=0.0.4; charset=utf-8", "True", "gzip", "True True"]


MOST_RECENT = """
import multiprocessing
def setter(name, value, stay, ready, release):
    import tokenspeed_metrics.prometheus_client as pc
    pc.Gauge("c:recent", "Recent.", multiprocess_mode="mostrecent").set(value)
    pc.Gauge("c:live_recent", "Live recent.", multiprocess_mode="livemostrecent").set(value)
    ready.set()
    if stay:
        release.wait(120)
if __name__ == "__main__":
    registry = pc.CollectorRegistry()
    pc.multiprocess.MultiProcessCollector(registry)  # every process's families
    context = multiprocessing.get_context("spawn")
    release = context.Event()
    processes = []
    # 10 then 3 (the later, smaller value wins), then 7 from a process that ends.
    for value, stay in ((10, True), (3, False)):
        ready = context.Event()
        p = context.Process(target=setter, args=("w", value, stay, ready, release))
        p.start(); assert ready.wait(120); processes.append(p)
    processes[1].join()
    print(pc.generate_latest(registry).decode())
    print("=====")
    release.set(); processes[0].join()
    print(pc.generate_latest(registry).decode())
"""


def test_mostrecent_takes_the_latest_set_across_processes_and_livemostrecent_drops_the_dead(
        workdir):
    lines = run_launcher(workdir, MOST_RECENT)
    split = lines.index("=====")
    before, after = lines[:split], lines[split + 1:]
    assert "c:recent 3.0" in before  # the later set, though smaller
    assert "c:live_recent 10.0" in before  # the process that set 3 has ended
    assert "c:recent 3.0" in after
    assert not any(line.startswith("c:live_recent ") for line in after)


PRODUCER_READS = """
import multiprocessing
def producer(queue):
    import tokenspeed_metrics.prometheus_client as pc
    c = pc.Counter("c:tokens", "Tokens.", ["k"])
    c.labels("a").inc(2, exemplar={"trace_id": "1"})
    c.labels(k="a").inc(amount=3)
    g = pc.Gauge("c:usage", "Usage.", ["k"], multiprocess_mode="mostrecent")
    g.labels("a").set(value=0.5)
    h = pc.Histogram("c:itl_seconds", "ITL.", ["k"], buckets=[0.01, 0.1])
    his = h.labels("a")
    his._sum.inc(0.3)
    pending = his._sum.get()             # prometheus_client's sum has grown already
    his._buckets[2].inc(2)               # 0.15 each: +Inf
    his.observe(0.005, exemplar={"trace_id": "2"})
    s = pc.Summary("c:forward_seconds", "Forward.", ["k"])
    s.labels("a").observe(0.25)
    pc.Enum("c_phase", "Phase.", states=["idle", "busy"]).state("busy")
    pc.Info("c:build", "Build.").info({"version": "1"})
    plain = pc.Counter("c:plain", "No labels.")
    plain.inc(7)
    step = pc.Histogram("c:step_seconds", "No labels.", buckets=[1])
    step._sum.inc(0.3)
    step._buckets[0].inc(3)
    reads = [c.labels("a")._value.get(), g.labels("a")._value.get(), pending, his._sum.get(),
             [bucket._value for bucket in his._buckets], s.labels("a")._count.get(),
             s.labels("a")._sum.get(), plain._value.get(), step._sum.get(),
             [bucket.get() for bucket in step._buckets]]
    collected = [[m.name, m.type, [[x.name, x.labels, x.value] for x in m.samples]]
                 for m in pc.REGISTRY.collect()]
    text = pc.generate_latest().decode()
    inf_bucket = pc.REGISTRY.get_sample_value("c:itl_seconds_bucket", {"k": "a", "le": "+Inf"})
    queue.put([reads, collected, text, inf_bucket])
if __name__ == "__main__":
    pc.Counter("c:tokens", "Tokens.", ["k"]).labels("a").inc(100)  # the launcher's own
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=producer, args=(queue,))
    process.start()
    print(json.dumps(queue.get(timeout=120)))
    process.join(120)
    print(pc.REGISTRY.get_sample_value("c:tokens_total", {"k": "a"}))
"""


def test_reads_and_registry_in_a_producer_give_that_processs_own_figures(workdir):
    lines = run_launcher(workdir, PRODUCER_READS)
    reads, collected, text, inf_bucket = json.loads(lines[0])
    assert reads == [5.0, 0.5, 0.3, 0.3 + 0.005, [1.0, 0.0, 2.0], 1.0, 0.25, 7.0, 0.3,
                     [3.0, 0.0]]
    assert collected == [
        ["c:tokens", "counter", [["c:tokens_total", {"k": "a"}, 5.0]]],
        ["c:usage", "gauge", [["c:usage", {"k": "a"}, 0.5]]],
        ["c:itl_seconds", "histogram", [
            ["c:itl_seconds_bucket", {"k": "a", "le": "0.01"}, 1.0],
            ["c:itl_seconds_bucket", {"k": "a", "le": "0.1"}, 1.0],
            ["c:itl_seconds_bucket", {"k": "a", "le": "+Inf"}, 3.0],
            ["c:itl_seconds_count", {"k": "a"}, 3.0],
            ["c:itl_seconds_sum", {"k": "a"}, 0.3 + 0.005]]],
        ["c:forward_seconds", "summary", [["c:forward_seconds_count", {"k": "a"}, 1.0],
                                          ["c:forward_seconds_sum", {"k": "a"}, 0.25]]],
        ["c_phase", "stateset", [["c_phase", {"c_phase": "idle"}, 0],
                                 ["c_phase", {"c_phase": "busy"}, 1]]],
        ["c:build", "info", [["c:build_info", {"version": "1"}, 1.0]]],
        ["c:plain", "counter", [["c:plain_total", {}, 7.0]]],
        ["c:step_seconds", "histogram", [["c:step_seconds_bucket", {"le": "1.0"}, 3.0],
                                         ["c:step_seconds_bucket", {"le": "+Inf"}, 3.0],
                                         ["c:step_seconds_count", {}, 3.0],
                                         ["c:step_seconds_sum", {}, 0.3]]]]
    text = text.splitlines()
    for line in ("# HELP c:tokens_total Tokens.", "# TYPE c:tokens_total counter",
                 'c:tokens_total{k="a"} 5.0', 'c:itl_seconds_bucket{k="a",le="+Inf"} 3.0',
                 "# TYPE c_phase gauge", 'c_phase{c_phase="busy"} 1.0',
                 "# TYPE c:build_info gauge", 'c:build_info{version="1"} 1.0'):
        assert line in text
    assert inf_bucket == 3.0
    assert lines[1] == "105.0"  # the launcher's REGISTRY: the node's merged value


def test_past_the_bound_on_series_a_child_is_not_kept(workdir):
    lines = run_launcher(workdir, """
c = pc.Counter("c:per_request", "Per request.", ["request"])
for i in range(5):
    c.labels("r%d" % i).inc()
print(len(c._children), c.labels("r0") is c.labels("r0"),
      c.labels("r4") is c.labels("r4"), c.labels("r0")._value.get())
""", flags=["--metrics-max-series-per-family", "3"])
    assert lines[0] == "3 True False 1.0"


def test_mark_process_dead_takes_prometheus_clients_arguments_and_never_fails(monkeypatch,
                                                                               tmp_path):
    import inspect

    from prometheus_client import multiprocess as reference
    from tokenspeed_metrics.prometheus_client import multiprocess
    assert (inspect.signature(multiprocess.mark_process_dead)
            == inspect.signature(reference.mark_process_dead))
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    monkeypatch.delenv("prometheus_multiproc_dir", raising=False)
    assert multiprocess.mark_process_dead(12345) is None  # no directory at all
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "absent"))
    assert multiprocess.mark_process_dead(12345) is None
    theirs = tmp_path / "gauge_livesum_12345.db"  # prometheus_client's file, not the host's
    theirs.write_bytes(b"")
    assert multiprocess.mark_process_dead(pid=12345, path=str(tmp_path)) is None
    assert theirs.exists()
