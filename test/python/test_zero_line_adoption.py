"""An engine that changes nothing but its imports: prometheus_client resolved
to tokenspeed_metrics.prometheus_client, no start(). With
PROMETHEUS_MULTIPROC_DIR it records and exposes as prometheus_client's
multiprocess mode does (any process sees every process); without it, as its
single-process mode. start() reads its flags from an explicit list or the
TOKENSPEED_METRICS_* environment, never from sys.argv.

Each program runs once on prometheus_client 0.16 (Debian's) and once on this
package, in fresh processes, and the expositions are compared sample by
sample."""
import collections
import os
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
TIMEOUT_S = 120  # hang guard only

# The engine's module: what it would be with "prometheus_client" imported.
# The first lines are the only change an engine makes (here made by the
# swap of sys.modules, as an import hook or a vendored name would).
ENGINE = '''
import multiprocessing, os, sys
if os.environ["IMPLEMENTATION"] == "tokenspeed":
    import tokenspeed_metrics.prometheus_client as _swapped
    from tokenspeed_metrics.prometheus_client import multiprocess as _swapped_multiprocess
    sys.modules["prometheus_client"] = _swapped
    sys.modules["prometheus_client.multiprocess"] = _swapped_multiprocess
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import multiprocess

TOKENS = Counter("eng:generation_tokens", "Tokens generated.", ["model_name", "engine"])
RUNNING = Gauge("eng:num_running", "Running requests.", ["model_name"],
                multiprocess_mode="livesum")
PEAK = Gauge("eng:peak_batch", "Largest batch.", ["model_name"], multiprocess_mode="max")
PER_PROCESS = Gauge("eng:kv_blocks", "KV blocks per process.", ["model_name"])
TTFT = Histogram("eng:time_to_first_token_seconds", "TTFT.", ["model_name"],
                 buckets=[0.0, 0.25, 0.5, 1.0, 2.5])


def record(rank):
    labels = {"model_name": "llama", "engine": str(rank % 2)}
    for step in range(300):
        TOKENS.labels(**labels).inc(rank + 1)          # per record, keyword labels
        TTFT.labels(model_name="llama").observe((step % 13) * 0.2)
    RUNNING.labels(model_name="llama").set(rank + 2)
    PEAK.labels(model_name="llama").set(10 * rank + 3)
    PER_PROCESS.labels(model_name="llama").set(100 + rank)


def producer(rank):
    record(rank)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        multiprocess.mark_process_dead(os.getpid())  # as engines do when a producer ends


def expose(queue):
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    queue.put(generate_latest(registry).decode())


if __name__ == "__main__":
    context = multiprocessing.get_context("spawn")
    producers = [context.Process(target=producer, args=(rank,)) for rank in (1, 2)]
    for process in producers:
        process.start()
    for process in producers:
        process.join()
        assert process.exitcode == 0, process.exitcode
    record(0)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        # A child that records nothing serves /metrics (vLLM's API servers).
        queue = context.Queue()
        child = context.Process(target=expose, args=(queue,))
        child.start()
        print(queue.get(timeout=100))
        child.join()
        print("=" * 20)
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        print(generate_latest(registry).decode())
    else:
        from prometheus_client import REGISTRY
        print(generate_latest(REGISTRY).decode())
'''


def run(workdir, implementation, multiprocess_dir=True, extra_env=None):
    program = os.path.join(workdir, "engine_%s.py" % implementation)
    with open(program, "w") as out:
        out.write(ENGINE)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TOKENSPEED_") and k.lower() != "prometheus_multiproc_dir"}
    env["IMPLEMENTATION"] = implementation
    if multiprocess_dir:
        shared = os.path.join(workdir, "multiproc-" + implementation)
        os.mkdir(shared)
        env["PROMETHEUS_MULTIPROC_DIR"] = shared
    env.update(extra_env or {})
    result = subprocess.run([sys.executable, program], capture_output=True, text=True, env=env,
                            timeout=TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr
    return result


def engine_samples(text, parent_pid=None):
    """The engine's samples as a multiset of (name, labels, value): a bucket's
    le compared as a number, a pid label as "pid" (each run has its own)."""
    out = collections.Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.startswith("eng:") or sample.name.endswith("_created"):
                continue
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = repr(float(labels["le"]))
            if "pid" in labels:
                labels["pid"] = "pid"
            out[(sample.name, tuple(sorted(labels.items())), sample.value)] += 1
    return out


def test_with_prometheus_multiproc_dir_any_process_exposes_every_process_as_prometheus_client(
        workdir):
    reference = run(workdir, "prometheus_client")
    ours = run(workdir, "tokenspeed")
    reference_child, reference_parent = reference.stdout.split("=" * 20)
    child, parent = ours.stdout.split("=" * 20)
    expected = engine_samples(reference_parent)
    assert len(expected) >= 15
    assert engine_samples(reference_child) == expected
    assert engine_samples(parent) == expected
    assert engine_samples(child) == expected
    assert "RuntimeError" not in ours.stderr


def test_without_prometheus_multiproc_dir_a_process_shows_its_own_values_as_prometheus_client(
        workdir):
    reference = run(workdir, "prometheus_client", multiprocess_dir=False)
    ours = run(workdir, "tokenspeed", multiprocess_dir=False)
    expected = engine_samples(reference.stdout)
    assert expected
    assert engine_samples(ours.stdout) == expected


def run_snippet(code, env_extra=None, argv=()):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TOKENSPEED_") and k.lower() != "prometheus_multiproc_dir"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                          env=env, timeout=TIMEOUT_S, check=False)


def test_start_reads_the_environment_and_leaves_the_engines_own_flags_in_sys_argv(workdir):
    # SGLang's own flags: start() neither strips nor rejects them.
    code = """
import sys, urllib.request, tokenspeed_metrics
before = list(sys.argv)
assert tokenspeed_metrics.start() is None
assert sys.argv == before, sys.argv
tokenspeed_metrics.Counter("env:started", "Started.").inc(3)
with urllib.request.urlopen(tokenspeed_metrics.metrics_url(), timeout=30) as response:
    print(response.read().decode())
print("rest", tokenspeed_metrics.close() is not None)
"""
    result = run_snippet(code, {"TOKENSPEED_METRICS_ENABLE": "1", "TOKENSPEED_METRICS_PORT": "0",
                                "TOKENSPEED_METRICS_MULTIPROC_DIR": workdir},
                         argv=("--enable-metrics", "--enable-metrics-for-all-schedulers"))
    assert result.returncode == 0, result.stderr
    assert "env:started_total 3" in result.stdout


def test_start_with_an_explicit_list_returns_the_rest_and_warns_of_unread_argv_flags(workdir):
    code = """
import sys, tokenspeed_metrics
rest = tokenspeed_metrics.start(["--model", "m", "--metrics-port", "0"])
print("rest", rest)
"""
    result = run_snippet(code)
    assert result.returncode == 0, result.stderr
    assert "rest ['--model', 'm']" in result.stdout
    # Metrics left disabled while sys.argv carries metrics flags: said once.
    result = run_snippet("import tokenspeed_metrics; tokenspeed_metrics.start()",
                         argv=("--enable-metrics",))
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("warning") == 1
    assert "start(sys.argv[1:])" in result.stderr and "--enable-metrics" in result.stderr


def test_a_bad_environment_value_is_a_startup_error_keyed_by_its_variable():
    code = """
import tokenspeed_metrics
try:
    tokenspeed_metrics.start()
except tokenspeed_metrics.StartupError as error:
    print("key", error.key)
"""
    result = run_snippet(code, {"TOKENSPEED_METRICS_ENABLE": "1",
                                "TOKENSPEED_METRICS_PORT": "not-a-port"})
    assert result.returncode == 0, result.stderr
    assert "key TOKENSPEED_METRICS_PORT" in result.stdout


def test_start_after_standalone_recording_and_a_missing_directory_are_clear_errors(workdir):
    code = """
import tokenspeed_metrics
from tokenspeed_metrics.prometheus_client import Counter, CollectorRegistry, multiprocess
try:
    multiprocess.MultiProcessCollector(CollectorRegistry())
except ValueError as error:
    print("collector:", error)
Counter("early:events", "Events.").inc()
print("role:", tokenspeed_metrics.role())
try:
    tokenspeed_metrics.start(["--enable-metrics"])
except RuntimeError as error:
    print("start:", error)
"""
    result = run_snippet(code)
    assert result.returncode == 0, result.stderr
    assert "collector: env PROMETHEUS_MULTIPROC_DIR is not set or not a directory" in result.stdout
    assert "role: standalone" in result.stdout
    assert "start: tokenspeed_metrics: this process already records standalone" in result.stdout
