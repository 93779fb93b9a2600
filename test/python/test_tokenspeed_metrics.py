"""The tokenspeed_metrics module as a Python engine uses it: a port of a
prometheus_client program, a launcher with multiprocessing producers (spawn and
fork) whose /metrics and jsonl output agree, a producer killed with SIGKILL,
and bad arguments.

Environment: PYTHONPATH reaches the package and the extension;
TSM_JSONL_PLUGIN_DIR holds jsonl.so; TSM_TEST_TMPDIR is a private directory
in the build tree (plugin directories under /tmp are refused)."""
import glob
import json
import math
import os
import subprocess
import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

import tokenspeed_metrics

HERE = os.path.dirname(os.path.abspath(__file__))
JSONL_DIR = os.environ.get("TSM_JSONL_PLUGIN_DIR", "")
TIMEOUT_S = 60  # hang guard only


def samples(text, prefix):
    """{(name, sorted labels): value} of the samples whose name starts with
    prefix. A bucket's le is compared as a number: prometheus_client writes
    "1.0" where we write "1", as the Go client does."""
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(prefix):
                labels = dict(sample.labels)
                if "le" in labels:
                    labels["le"] = repr(float(labels["le"]))
                out[(sample.name, tuple(sorted(labels.items())))] = sample.value
    return out


def run_python(*args, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=env, check=False)


def run_script(workdir, text, env=None):
    """Runs text as a file's main program: the spawn start method imports it
    again in each producer."""
    path = os.path.join(workdir, "program.py")
    with open(path, "w") as script:
        script.write(text)
    return run_python(path, env=env)


def test_a_prometheus_client_program_ported_by_its_import_gives_the_same_exposition(workdir):
    program = os.path.join(HERE, "ported_program.py")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    reference_dir = os.path.join(workdir, "reference")
    os.mkdir(reference_dir)
    reference = run_python(program, "--client", "prometheus_client", "--dir", reference_dir,
                           env=env)
    assert reference.returncode == 0, reference.stderr
    ported = run_python(program, "--client", "tokenspeed_metrics", "--dir", workdir, env=env)
    assert ported.returncode == 0, ported.stderr
    expected = samples(reference.stdout, "app:")
    got = samples(ported.stdout, "app:")
    assert expected, reference.stdout
    # prometheus_client adds a _created sample per counter and histogram; we have none.
    expected = {key: value for key, value in expected.items() if not key[0].endswith("_created")}
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert math.isclose(got[key], value, rel_tol=1e-12, abs_tol=1e-12), key


def record_in_producer(index):
    requests = tokenspeed_metrics.Counter("py:requests", "Requests.", ["producer"])
    tokens = tokenspeed_metrics.Histogram("py:chunk_latency_seconds", "Per-token latency.",
                                          ["producer"], buckets=(0.01, 0.1, 1.0))
    child = requests.labels(str(index))
    latency = tokens.labels(producer=str(index))
    for i in range(500):
        child.inc(index + 1)
        latency.observe(0.02, weight=4)  # one chunk of four tokens
    latency.observe_many([0.005, 0.5])


@pytest.mark.parametrize("start_method", ["spawn", "fork"])
def test_a_launcher_with_three_multiprocessing_producers_sums_them_and_jsonl_agrees(
        workdir, start_method):
    script = f"""
import json, multiprocessing, os, sys, urllib.request
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_tokenspeed_metrics import record_in_producer
if __name__ == "__main__":
    sys.argv[1:] = ["--enable-metrics", "--metrics-reporters", "prometheus,jsonl",
                    "--metrics-reporter-config", {os.path.join(workdir, "m.json")!r},
                    "--metrics-plugin-dir", {JSONL_DIR!r}, "--metrics-port", "0",
                    "--metrics-multiproc-dir", {workdir!r}, "--engine-flag", "kept"]
    given = list(sys.argv)
    rest = tokenspeed_metrics.start(sys.argv[1:])
    assert rest == ["--engine-flag", "kept"], rest
    assert sys.argv == given, sys.argv  # the engine's command line is its own
    context = multiprocessing.get_context({start_method!r})
    producers = [context.Process(target=record_in_producer, args=(i,)) for i in range(3)]
    for w in producers: w.start()
    for w in producers: w.join(); assert w.exitcode == 0, w.exitcode
    with urllib.request.urlopen(tokenspeed_metrics.metrics_url(), timeout=30) as r:
        sys.stdout.write(r.read().decode())
    report = tokenspeed_metrics.close()
    sys.stderr.write(report["table"])
    # jsonl's own figures: every event it was handed is in its file; a
    # process that handed it none made no sink, and has none ("plugin": None).
    assert report["outputs"], report
    for row in report["outputs"]:
        want = (None if row["delivered"] == 0 else
                {{"sent": row["delivered"], "refused": 0, "lost": 0, "retries": 0, "pending": 0}})
        assert row["plugin"] == want, row
"""
    with open(os.path.join(workdir, "m.json"), "w") as config:
        json.dump({"jsonl": {"path": os.path.join(workdir, "events-{pid}.jsonl")}}, config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    scrape = samples(result.stdout, "py:")
    for producer in range(3):
        label = (("producer", str(producer)),)
        assert scrape[("py:requests_total", label)] == 500 * (producer + 1)
        assert scrape[("py:chunk_latency_seconds_count", label)] == 500 * 4 + 2
        assert math.isclose(scrape[("py:chunk_latency_seconds_sum", label)], 500 * 0.08 + 0.505)
        assert scrape[("py:chunk_latency_seconds_bucket", (("le", repr(0.1)),) + label)] == 2001
    totals = {}
    files = glob.glob(os.path.join(workdir, "events-*.jsonl"))
    assert len(files) == 3, files
    for path in files:
        with open(path) as lines:
            for line in lines:
                event = json.loads(line)
                key = (event["metric"], event["labels"]["producer"])
                count, total = totals.get(key, (0, 0.0))
                totals[key] = (count + event["weight"], total + event["value"] * event["weight"])
    for producer in range(3):
        assert totals[("py:requests_total", str(producer))][1] == 500 * (producer + 1)
        count, total = totals[("py:chunk_latency_seconds", str(producer))]
        assert count == 2002
        assert math.isclose(total, 500 * 0.08 + 0.505)
    assert "Process-" in result.stderr  # the summary names the multiprocessing producers


def test_a_producer_killed_with_sigkill_leaves_its_counters_and_drops_its_live_gauges(workdir):
    script = f"""
import multiprocessing, os, signal, sys, time
import tokenspeed_metrics
REQ = tokenspeed_metrics.Counter("py:killed_requests", "Requests.")
BUSY = tokenspeed_metrics.Gauge("py:busy", "Busy.", multiprocess_mode="livesum")
def victim(ready):
    REQ.inc(7)
    BUSY.set(5)
    ready.set()
    time.sleep(600)  # alive until the test kills it: the kill is what is tested
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r}])
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    producer = context.Process(target=victim, args=(ready,))
    producer.start()
    assert ready.wait(30)
    before = tokenspeed_metrics.generate_latest().decode()
    os.kill(producer.pid, signal.SIGKILL)
    producer.join()
    after = tokenspeed_metrics.generate_latest().decode()
    print(before + "\\n=====\\n" + after)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    before, after = result.stdout.split("=====")
    assert samples(before, "py:")[("py:busy", ())] == 5
    assert samples(before, "py:")[("py:killed_requests_total", ())] == 7
    assert ("py:busy", ()) not in samples(after, "py:")
    assert samples(after, "py:")[("py:killed_requests_total", ())] == 7


def test_bad_arguments_raise_with_a_clear_message():
    counter = tokenspeed_metrics.Counter("py:bad", "Bad.", ["a", "b"])
    with pytest.raises(ValueError, match="Incorrect label count"):
        counter.labels("only-one")
    with pytest.raises(ValueError, match="missing label values"):
        counter.inc()
    with pytest.raises(ValueError, match="not a valid metric name"):
        tokenspeed_metrics.Counter("9bad", "Bad.")
    with pytest.raises(ValueError, match="Invalid multiprocess mode"):
        tokenspeed_metrics.Gauge("py:g", "G.", multiprocess_mode="latest")
    with pytest.raises(tokenspeed_metrics.StartupError) as unknown:
        tokenspeed_metrics.extract_metrics_flags(["--metrics-reporter", "x"])
    assert unknown.value.args[3] == "--metrics-reporter"
    assert "unknown metrics flag" in str(unknown.value)


def test_a_family_whose_sample_names_collide_with_another_is_refused_with_value_error():
    script = """
import os, tokenspeed_metrics
for v in ("TOKENSPEED_METRICS_HANDOFF_FILE", "TOKENSPEED_METRICS_HANDOFF_FD",
          "TOKENSPEED_METRICS_DISABLED"):
    os.environ.pop(v, None)
tokenspeed_metrics.start([])
tokenspeed_metrics.Counter("py:c", "C.").inc()
tokenspeed_metrics.Histogram("py:h", "H.").observe(1)
for name in ("py:c_total", "py:c_created", "py:h_bucket", "py:h_count"):
    try:
        tokenspeed_metrics.Gauge(name, "G.").set(1)
        print("accepted:", name)
    except ValueError as error:
        print("refused:", error)
"""
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4, result.stdout
    assert lines[0] == ("refused: metric py:c_total (gauge) collides with the counter py:c already "
                        "defined in this process: both claim the sample name py:c_total "
                        "(duplicated timeseries)")
    assert "counter py:c " in lines[1]
    assert "histogram py:h " in lines[2] and "py:h_bucket" in lines[2]
    assert "histogram py:h " in lines[3]


def define_differently_in_producer(index):
    """Producers 0 and 1 agree; producer 2 defines py:shared otherwise and a gauge
    whose name collides with producer 0's counter py:c."""
    if index < 2:
        tokenspeed_metrics.Counter("py:shared", "Requests.").inc(index + 1)
    else:
        tokenspeed_metrics.Gauge("py:shared", "Requests?", multiprocess_mode="max").set(7)
        tokenspeed_metrics.Gauge("py:c_total", "A gauge.", multiprocess_mode="max").set(9)
    if index == 0:
        tokenspeed_metrics.Counter("py:c", "A counter.").inc(3)


def test_processes_that_define_one_name_differently_are_counted_and_logged_once(workdir):
    script = f"""
import multiprocessing, sys, urllib.request
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_tokenspeed_metrics import define_differently_in_producer
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r}])
    context = multiprocessing.get_context("spawn")
    producers = [context.Process(target=define_differently_in_producer, args=(i,)) for i in range(3)]
    for w in producers: w.start()
    for w in producers: w.join(); assert w.exitcode == 0, w.exitcode
    for scrape in range(3):
        with urllib.request.urlopen(tokenspeed_metrics.metrics_url(), timeout=30) as r:
            text = r.read().decode()
    sys.stdout.write(text)
    tokenspeed_metrics.close()
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    scrape = samples(result.stdout, "py:")
    assert scrape[("py:shared_total", ())] == 3  # the definition two producers hold
    assert scrape[("py:c_total", ())] == 3  # the counter py:c, not producer 2's gauge
    own = samples(result.stdout, "tokenspeed_metrics_merge_")
    for family, series in (("py:shared", 1), ("py:c_total", 1)):
        label = (("family", family),)
        assert own[("tokenspeed_metrics_merge_conflicting_definitions", label)] == 1
        assert own[("tokenspeed_metrics_merge_series_left_out", label)] == series
    warnings = [line for line in result.stderr.splitlines() if "warning: metric py:" in line]
    assert len(warnings) == 2, result.stderr  # once per family, not per scrape
    assert "py:shared is defined differently" in warnings[0] or \
        "py:shared is defined differently" in warnings[1]
    assert any("py:c_total collides with py:c" in line for line in warnings), warnings
    if os.path.exists("/usr/bin/promtool"):
        check = subprocess.run(["/usr/bin/promtool", "check", "metrics"], input=result.stdout,
                               capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        problems = [line for line in check.stdout.splitlines() + check.stderr.splitlines()
                    if line.strip() and "should not contain ':'" not in line]
        assert check.returncode in (0, 3) and not problems, check.stdout + check.stderr


def test_negative_increments_are_refused_and_recording_before_start_records_standalone():
    script = """
import os, tokenspeed_metrics
for v in ("TOKENSPEED_METRICS_HANDOFF_FILE", "TOKENSPEED_METRICS_HANDOFF_FD",
          "TOKENSPEED_METRICS_DISABLED", "PROMETHEUS_MULTIPROC_DIR"):
    os.environ.pop(v, None)
c = tokenspeed_metrics.Counter("py:early", "Early.")
c.inc(2)
print("role:", tokenspeed_metrics.role())
print(tokenspeed_metrics.generate_latest().decode())
try:
    c.inc(-1)
except ValueError as error:
    print("negative:", error)
"""
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr
    assert "role: standalone" in result.stdout
    assert "py:early_total 2" in result.stdout
    assert "negative: Counters can only be incremented by non-negative amounts." in result.stdout


def test_a_startup_error_names_reporter_file_and_key(workdir):
    config = os.path.join(workdir, "bad.json")
    with open(config, "w") as out:
        out.write('{"jsonl": {"path": "/x"}, "jsonl": {}}')
    script = f"""
import tokenspeed_metrics
try:
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-reporters", "jsonl",
                              "--metrics-reporter-config", {config!r},
                              "--metrics-plugin-dir", {JSONL_DIR!r}])
except tokenspeed_metrics.StartupError as error:
    print(error.args[0]); print(error.args[2])
"""
    result = run_python("-c", script)
    assert result.returncode == 0, result.stderr
    message, file_name = result.stdout.splitlines()[:2]
    assert file_name == config
    assert "duplicate" in message


# The resident size of the script's process, in KiB (a script's function).
RSS_KIB = """def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
"""


def run_growth_script(workdir, script):
    """Runs a script that prints its size before and after, "=====", and
    its exposition: (before, after, exposition, result)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    sizes, exposition = result.stdout.split("=====")
    before, after = (int(size) for size in sizes.split())
    return before, after, exposition, result


def test_new_label_values_past_the_bound_on_series_are_refused_and_the_process_stays_bounded(
        workdir):
    script = f"""
import multiprocessing, resource, sys
import tokenspeed_metrics
REQ = tokenspeed_metrics.Counter("py:per_request", "One series per request id.", ["request"])
{RSS_KIB}def record(first, count):
    for i in range(first, first + count):
        REQ.labels(f"request-{{i}}").inc()
def producer():
    record(0, 1000)
if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r},
                              "--metrics-max-series-per-family", "100"])
    record(0, 20000)
    kept = REQ.labels("request-5")  # a series that exists keeps recording
    kept.inc(41)
    before = rss_kib()
    record(20000, 200000)
    after = rss_kib()
    context = multiprocessing.get_context("spawn")
    process = context.Process(target=producer)
    process.start()
    process.join()
    assert process.exitcode == 0
    print(before, after)
    print("=====")
    print(tokenspeed_metrics.generate_latest().decode())
"""
    before, after, exposition, result = run_growth_script(workdir, script)
    # 200,000 refused label values: no series, no cached child, a few MB at most.
    assert after - before < 16 * 1024, (before, after)
    found = samples(exposition, "py:per_request")
    assert len(found) == 100  # the launcher's 100 series; the producer's are the same ids
    assert found[("py:per_request_total", (("request", "request-5"),))] == 1 + 41 + 1
    refused = samples(exposition, "tokenspeed_metrics_series_refused")
    # The launcher refused 220,000 - 100 calls, the producer 1000 - 100.
    assert refused == {("tokenspeed_metrics_series_refused_total",
                        (("family", "py:per_request"),)): 219900 + 900}
    # One line per process for the family, with an example label set.
    lines = [line for line in result.stderr.splitlines() if "py:per_request' has 100 series" in line]
    assert len(lines) == 2, result.stderr
    assert 'first refused: {request="request-100"}' in lines[0]


def test_label_sets_past_a_views_cardinality_limit_add_up_in_the_overflow_series_uncached(
        workdir):
    views = os.path.join(workdir, "views.json")
    with open(views, "w", encoding="utf-8") as out:
        json.dump({"views": [{"select": {"name": "py:per_request"}, "cardinality_limit": 10}]},
                  out)
    script = f"""
import tokenspeed_metrics
REQ = tokenspeed_metrics.Counter("py:per_request", "One series per request id.", ["request"])
{RSS_KIB}if __name__ == "__main__":
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-multiproc-dir", {workdir!r},
                              "--metrics-views", {views!r}])
    for i in range(20000):
        REQ.labels(f"request-{{i}}").inc()
    REQ.labels("request-5").inc(41)  # a series that exists keeps recording
    before = rss_kib()
    for i in range(20000, 220000):
        REQ.labels(f"request-{{i}}").inc()
    after = rss_kib()
    print(before, after)
    print("=====")
    print(tokenspeed_metrics.generate_latest().decode())
"""
    before, after, exposition, result = run_growth_script(workdir, script)
    # 200,000 label sets past the cap: one series, no cached child each.
    assert after - before < 16 * 1024, (before, after)
    found = samples(exposition, "py:per_request")
    assert len(found) == 10  # 9 label sets and the overflow series
    own = (("request", "request-5"),)  # no empty overflow label on /metrics
    assert found[("py:per_request_total", own)] == 1 + 41
    overflow = (("otel_metric_overflow", "true"), ("request", ""))
    assert found[("py:per_request_total", overflow)] == 220000 - 9
    assert sum(found.values()) == 220000 + 41  # nothing lost
    overflowed = samples(exposition, "tokenspeed_metrics_series_overflowed")
    assert overflowed == {("tokenspeed_metrics_series_overflowed_total",
                           (("family", "py:per_request"),)): 220000 - 9}
    lines = [line for line in result.stderr.splitlines() if "py:per_request' has 10 series" in line]
    assert len(lines) == 1, result.stderr
    assert 'first: {request="request-9"}' in lines[0]


def test_summary_observe_total_reads_exemplars_and_kept_series(workdir):
    script = f"""
import tokenspeed_metrics
tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                          "--metrics-multiproc-dir", {workdir!r},
                          "--metrics-max-series-per-family", "2"])
C = tokenspeed_metrics.Counter("py:c", "C.", ["k"])
G = tokenspeed_metrics.Gauge("py:g", "G.", ["k"], multiprocess_mode="mostrecent")
H = tokenspeed_metrics.Histogram("py:h", "H.", ["k"], buckets=(0.1, 0.5))
S = tokenspeed_metrics.Summary("py:s", "S.", ["k"])
C.labels("a").inc(2, exemplar={{"trace_id": "1"}})
C.labels("a").inc(amount=1, exemplar=None)
G.labels("a").set(value=7)
h = H.labels("a")
h.observe(0.3, exemplar={{"trace_id": "2"}})
for _ in range(10):
    h.observe_total(1.0, 3)
S.labels("a").observe(0.25, 2)
S.labels("a").observe(0.5)
print("counter", C.labels("a").get())
print("gauge", G.labels("a").get())
print("buckets", h.bucket_counts())
print("sum", h.sum())
print("summary", S.labels("a").bucket_counts(), S.labels("a").sum())
print("kept", C.labels("b").kept, C.labels("c").kept)
plain = tokenspeed_metrics.Histogram("py:plain", "No labels.", buckets=(1,))
plain.observe_total(3.0, 2)
plain_counter = tokenspeed_metrics.Counter("py:plain_c", "No labels.")
plain_counter.inc(4)
print("family", plain.bucket_counts(), plain.sum(), plain_counter.get())
try:
    S.labels("a").observe(1, {{"trace_id": "3"}})
except ValueError as error:
    print("positional exemplar:", error)
print("=====")
print(tokenspeed_metrics.generate_latest().decode())
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    head, exposition = result.stdout.split("=====")
    assert "counter 3.0" in head
    assert "gauge 7.0" in head
    assert "buckets (0.0, 31.0, 0.0)" in head
    assert "sum 10.3" in head
    assert "summary (3.0,) 1.0" in head
    assert "kept True False" in head  # a third series of py:c is past the bound of 2
    assert "family (0.0, 2.0) 3.0 4.0" in head  # families without labels read their child
    assert "positional exemplar: weight must be a non-negative integer" in head
    found = samples(exposition, "py:")
    assert found[("py:h_sum", (("k", "a"),))] == 10.3
    assert found[("py:h_count", (("k", "a"),))] == 31
    assert found[("py:s_sum", (("k", "a"),))] == 1.0
    assert found[("py:s_count", (("k", "a"),))] == 3
    assert found[("py:g", (("k", "a"),))] == 7
    assert "# TYPE py:s summary" in exposition


def test_a_disabled_plugin_name_that_matches_nothing_is_warned_once_by_the_launcher(workdir):
    script = f"""
import multiprocessing, sys
sys.path.insert(0, {HERE!r})
import tokenspeed_metrics
from test_tokenspeed_metrics import record_in_producer
if __name__ == "__main__":
    config = {os.path.join(workdir, "m.json")!r}
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-reporters", "jsonl",
                              "--metrics-reporter-config", config,
                              "--metrics-plugin-dir", {JSONL_DIR!r},
                              "--metrics-multiproc-dir", {workdir!r}])
    context = multiprocessing.get_context("spawn")
    producers = [context.Process(target=record_in_producer, args=(i,)) for i in range(2)]
    for w in producers: w.start()
    for w in producers: w.join(); assert w.exitcode == 0, w.exitcode
    tokenspeed_metrics.close()
"""
    with open(os.path.join(workdir, "m.json"), "w") as config:
        json.dump({"jsonl": {"path": os.path.join(workdir, "events-{pid}.jsonl")}}, config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    env["TOKENSPEED_DISABLE_PLUGINS"] = "jsnol"
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("TOKENSPEED_DISABLE_PLUGINS names 'jsnol'") == 1, result.stderr
    assert glob.glob(os.path.join(workdir, "events-*.jsonl"))  # the producers recorded


def test_a_native_histogram_keeps_exponential_buckets_and_bad_options_name_the_metric(workdir):
    script = f"""
import tokenspeed_metrics
from tokenspeed_metrics import prometheus_client as pc
tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                          "--metrics-multiproc-dir", {workdir!r}])
H = tokenspeed_metrics.Histogram("py:ttft_seconds", "TTFT.", ["k"], native=True,
                                 native_max_buckets=40)
for value, weight in ((0.1, 3), (0.2, 2), (3.0, 1), (-0.5, 1), (0.0, 1)):
    H.labels("a").observe(value, weight)
compat = pc.Histogram("py:compat_seconds", "Compat.", native=True)
compat.observe(0.25)
print("sum", H.labels("a").sum(), "classic", H.labels("a").bucket_counts()[:2])
for bad in (dict(native_max_buckets=1), dict(native_max_scale=21),
            dict(native_zero_threshold=-1.0)):
    try:
        tokenspeed_metrics.Histogram("py:bad_seconds", "Bad.", native=True, **bad)
    except ValueError as error:
        print("refused:", error)
print("=====")
print(tokenspeed_metrics.generate_latest().decode())
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    head, exposition = result.stdout.split("=====")
    assert "sum 3.2" in head
    assert "classic (0.0, 0.0)" in head  # no classic counts: one lookup per observe
    refusals = [line for line in head.splitlines() if line.startswith("refused:")]
    assert len(refusals) == 3
    assert all("py:bad_seconds" in line for line in refusals)
    assert "max_buckets" in refusals[0] and "max_scale" in refusals[1]
    assert "zero_threshold" in refusals[2]
    found = samples(exposition, "py:ttft_seconds")
    assert found[("py:ttft_seconds_count", (("k", "a"),))] == 8
    assert found[("py:ttft_seconds_sum", (("k", "a"),))] == pytest.approx(3.2)
    buckets = sorted((float(dict(labels)["le"]), value)
                     for (name, labels), value in found.items() if name.endswith("_bucket"))
    assert buckets[-1] == (math.inf, 8)
    # Cumulative at the exponential boundaries: -0.5 below zero, the zero,
    # then 0.1 (x3), 0.2 (x2) and 3.0 each at the upper boundary of its bucket.
    assert [value for _, value in buckets] == sorted(value for _, value in buckets)
    at = {bound: value for bound, value in buckets}
    assert at[0.0] == 2
    assert min(bound for bound in at if bound >= 0.1) < 0.11 and at[min(b for b in at if b >= 0.1)] == 5
    compat_count = samples(exposition, "py:compat_seconds_count")
    assert list(compat_count.values()) == [1]


def observe_native_forever(ready):
    """A producer's loop on one native histogram, with values that keep
    moving its range (downscales and moves of its run under way)."""
    import itertools
    histogram = tokenspeed_metrics.Histogram("py:loop_seconds", "Loop.", native=True,
                                             native_max_buckets=20)
    histogram.observe(1.0)
    ready.set()
    for i in itertools.count():
        histogram.observe(2.0 ** ((i * 7) % 61 - 30) * (1 + (i % 5) / 8))


@pytest.mark.parametrize("launcher", [True, False], ids=["launcher", "no-start"])
def test_a_native_histogram_observed_in_a_loop_is_on_every_scrape_and_survives_sigkill(
        workdir, launcher):
    """A scrape never leaves out a live series while its writer is inside an
    observe, and a writer killed there leaves the series with at most the
    observation in flight missing, counted."""
    start = (f"tokenspeed_metrics.start(['--enable-metrics', '--metrics-port', '0', "
             f"'--metrics-multiproc-dir', {workdir!r}])" if launcher else "pass")
    script = f"""
import multiprocessing, os, signal, sys
import tokenspeed_metrics
from test_tokenspeed_metrics import observe_native_forever
if __name__ == "__main__":
    {start}
    context = multiprocessing.get_context("spawn")
    ready = context.Event()
    producer = context.Process(target=observe_native_forever, args=(ready,))
    producer.start()
    assert ready.wait(30)
    for _ in range(100):
        print(tokenspeed_metrics.generate_latest().decode())
        print("=====")
    os.kill(producer.pid, signal.SIGKILL)
    producer.join()
    print(tokenspeed_metrics.generate_latest().decode())
"""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TOKENSPEED_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    if not launcher:
        env["PROMETHEUS_MULTIPROC_DIR"] = workdir
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    *live, killed = result.stdout.split("=====")
    counts = []
    for text in live:
        found = samples(text, "py:loop_seconds_count")
        assert list(found) == [("py:loop_seconds_count", ())], text[-2000:]
        counts.append(found[("py:loop_seconds_count", ())])
    assert counts == sorted(counts) and counts[-1] > counts[0]
    after = samples(killed, "py:loop_seconds_count")[("py:loop_seconds_count", ())]
    assert after >= counts[-1]
    interrupted = samples(killed, "tokenspeed_metrics_observations_interrupted")
    assert set(interrupted.values()) <= {1.0}


@pytest.mark.parametrize("shared", [True, False], ids=["multiproc-dir", "in-memory"])
def test_recording_without_start_takes_the_series_bound_from_the_environment(workdir, shared):
    """Without a launcher the refusal line's setting is the environment's:
    TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY raises (or lowers) the bound."""
    script = """
import tokenspeed_metrics
C = tokenspeed_metrics.Counter("py:bounded", "Bounded.", ["k"])
print("kept", [C.labels(str(i)).kept for i in range(4)])
print("=====")
print(tokenspeed_metrics.generate_latest().decode())
"""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TOKENSPEED_") and k != "PROMETHEUS_MULTIPROC_DIR"}
    env["TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY"] = "2"
    if shared:
        env["PROMETHEUS_MULTIPROC_DIR"] = workdir
    result = run_script(workdir, script, env=env)
    assert result.returncode == 0, result.stderr
    head, exposition = result.stdout.split("=====")
    assert "kept [True, True, False, False]" in head
    assert "TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY" in result.stderr
    refused = samples(exposition, "tokenspeed_metrics_series_refused")
    assert list(refused.values()) == [2.0]
    env["TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY"] = "many"
    result = run_script(workdir, script, env=env)
    assert result.returncode != 0
    assert "TOKENSPEED_METRICS_MAX_SERIES_PER_FAMILY" in result.stderr


def test_a_reused_multiproc_dir_without_start_is_warned_naming_the_earlier_files(workdir):
    """prometheus_client sums an earlier run's files silently; a process
    recording into the same directory says which files it will sum."""
    script = """
import tokenspeed_metrics
tokenspeed_metrics.Counter("py:runs", "Runs.").inc()
print(tokenspeed_metrics.generate_latest().decode())
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENSPEED_")}
    env["PROMETHEUS_MULTIPROC_DIR"] = workdir
    first = run_script(workdir, script, env=env)
    assert first.returncode == 0, first.stderr
    assert "metric files of processes" not in first.stderr
    earlier = [name for name in os.listdir(workdir) if name.endswith(".db")]
    assert len(earlier) == 1
    second = run_script(workdir, script, env=env)
    assert second.returncode == 0, second.stderr
    warnings = [line for line in second.stderr.splitlines() if "metric files of processes" in line]
    assert len(warnings) == 1, second.stderr
    assert earlier[0] in warnings[0] and workdir in warnings[0]
    assert samples(second.stdout, "py:runs")[("py:runs_total", ())] == 2  # summed, as said
