"""Each engine program (tokenspeed_program.py, vllm_program.py,
sglang_program.py: our own code, written to that engine's metrics call
patterns) runs twice: on python3-prometheus-client's multiprocess mode, and
with its imports changed to tokenspeed_metrics.prometheus_client (a jsonl
output selected). Every sample of the launcher's /metrics must be equal.

Normalisation of the two expositions, parsed with prometheus_client's
parser (each documented in docs/python.md):
- le is compared as a number (generate_latest writes le="1.0" as
  prometheus_client does, the host's own /metrics le="1" as the Go client
  does);
- the pid label of multiprocess_mode="all" gauges becomes the producer's role
  (pids differ between runs);
- families of the host itself (tokenspeed_metrics_*) are left out: they are
  not the engine's;
- values are equal exactly: a batched idiom's sum grows by each batch's
  total, as prometheus_client's _sum.inc(total) does;
- gauges a program sets with set_to_current_time() are checked to lie in
  their own run's time window (k times it for a sum-mode gauge that k
  processes set), then compared as that fact.
With Debian's prometheus_client (0.16), mostrecent runs as max in the
reference (reference_client.py): the same /metrics for a series one process
sets, which is how the programs use it; what mostrecent means across
processes is asserted in test_prometheus_client_compat.py."""
import glob
import json
import math
import os
import subprocess
import sys

from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
JSONL_DIR = os.environ.get("TSM_JSONL_PLUGIN_DIR", "")
TIMEOUT_S = 300  # hang guard only: the machine may be loaded


def run_program(program, client, workdir, flags=(), zero_line=False, extra_env=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    env.update(extra_env or {})
    env["ENGINE_PATTERNS_CLIENT"] = client
    env["ENGINE_PATTERNS_ZERO_LINE"] = "1" if zero_line else "0"
    env["ENGINE_PATTERNS_FLAGS"] = json.dumps(list(flags))
    result = subprocess.run([sys.executable, os.path.join(HERE, program), workdir],
                            capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                            check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout), result.stderr


def samples(run, clock_gauges):
    """{(name, sorted labels): value} of the engine's samples, normalised as
    the module docstring says."""
    start, end = run["window"]
    out = {}
    for family in text_string_to_metric_families(run["exposition"]):
        if family.name.startswith("tokenspeed_metrics_"):
            continue
        for sample in family.samples:
            labels = dict(sample.labels)
            if "le" in labels:
                labels["le"] = repr(float(labels["le"]))
            if "pid" in labels:
                labels["pid"] = run["roles"].get(labels["pid"], "launcher")
            value = sample.value
            if sample.name in clock_gauges:
                # A sum-mode gauge that k processes set to the time holds k readings.
                readings = round(value / start)
                assert readings >= 1 and start * readings <= value <= end * readings, (
                    sample, start, end)
                value = "%d clock readings within the run" % readings
            out[(sample.name, tuple(sorted(labels.items())))] = value
    return out


def assert_same_samples(reference, ours, clock_gauges=()):
    expected = samples(reference, clock_gauges)
    got = samples(ours, clock_gauges)
    assert expected, reference["exposition"]
    missing = sorted(set(expected) - set(got))
    extra = sorted(set(got) - set(expected))
    assert not missing and not extra, (missing[:10], extra[:10])
    for key, value in expected.items():
        assert got[key] == value, (key, got[key], value)


def jsonl_flags(workdir):
    config = os.path.join(workdir, "outputs.json")
    with open(config, "w") as out:
        json.dump({"jsonl": {"path": os.path.join(workdir, "events-{pid}.jsonl")}}, out)
    return ["--metrics-reporters", "prometheus,jsonl", "--metrics-reporter-config", config,
            "--metrics-plugin-dir", JSONL_DIR]


def events_of(workdir, metric):
    events = []
    for path in glob.glob(os.path.join(workdir, "events-*.jsonl")):
        with open(path) as lines:
            events += [e for e in map(json.loads, lines) if e["metric"] == metric]
    return events


def assert_one_weighted_event_per_batch(ours, workdir):
    """The batched idiom reaches the outputs as one observe of weight n per
    batch (value total / n: value * n is total up to rounding), and /metrics
    has the count and the exact sum of the totals (one series)."""
    idiom = ours["idiom"]
    events = events_of(workdir, idiom["metric"])
    assert len(events) == idiom["batches"]
    assert sum(e["weight"] for e in events) == idiom["samples"]
    total = math.fsum(e["value"] * e["weight"] for e in events)
    assert math.isclose(total, idiom["sum"], rel_tol=1e-12)
    scrape = samples(ours, ())
    count = [v for (name, _), v in scrape.items() if name == idiom["metric"] + "_count"]
    summed = [v for (name, _), v in scrape.items() if name == idiom["metric"] + "_sum"]
    assert count == [idiom["samples"]]
    assert summed == [idiom["sum"]]


def run_both(program, workdir):
    reference_dir = os.path.join(workdir, "reference")
    ours_dir = os.path.join(workdir, "ours")
    os.mkdir(reference_dir)
    os.mkdir(ours_dir)
    reference, _ = run_program(program, "prometheus_client", reference_dir)
    ours, _ = run_program(program, "tokenspeed_metrics", ours_dir, jsonl_flags(ours_dir))
    return reference, ours, ours_dir


def run_zero_line(program, workdir):
    """The program on prometheus_client and on this package with its imports
    changed and nothing else (no start(), no outputs)."""
    reference_dir = os.path.join(workdir, "reference")
    ours_dir = os.path.join(workdir, "zero-line")
    os.mkdir(reference_dir)
    os.mkdir(ours_dir)
    reference, _ = run_program(program, "prometheus_client", reference_dir)
    ours, stderr = run_program(program, "tokenspeed_metrics", ours_dir, zero_line=True)
    assert "Traceback" not in stderr, stderr
    return reference, ours


def test_a_tokenspeed_style_engine_gives_the_same_metrics_and_one_event_per_batch(workdir):
    reference, ours, ours_dir = run_both("tokenspeed_program.py", workdir)
    assert ours["content_type"] == reference["content_type"]
    assert_same_samples(reference, ours)
    assert_one_weighted_event_per_batch(ours, ours_dir)


def test_a_vllm_style_engine_gives_the_same_metrics_before_and_after_its_producers_end(workdir):
    reference, ours, _ = run_both("vllm_program.py", workdir)
    clock = {"vllm:lora_requests_info"}
    assert_same_samples(reference, ours, clock)
    after = {key: dict(run, exposition=run["after_exit"]) for key, run in
             (("reference", reference), ("ours", ours))}
    assert_same_samples(after["reference"], after["ours"], clock)
    assert ours["snapshot"] == reference["snapshot"]
    assert any(row[1] == "vllm:launcher_requests" for row in ours["snapshot"])
    # An API server that records nothing renders every process's families.
    from_child = {key: dict(run, exposition=run["from_child"]) for key, run in
                  (("reference", reference), ("ours", ours))}
    assert_same_samples(from_child["reference"], from_child["ours"], clock)


def test_a_vllm_style_engine_runs_unchanged_but_its_imports_without_start(workdir):
    reference, ours = run_zero_line("vllm_program.py", workdir)
    clock = {"vllm:lora_requests_info"}
    assert_same_samples(reference, ours, clock)
    for exposition in ("after_exit", "from_child"):
        assert_same_samples(dict(reference, exposition=reference[exposition]),
                            dict(ours, exposition=ours[exposition]), clock)
    assert ours["snapshot"] == reference["snapshot"]


def test_an_sglang_style_engine_gives_the_same_metrics_and_one_event_per_batch(workdir):
    reference, ours, ours_dir = run_both("sglang_program.py", workdir)
    assert ours["content_type"] == reference["content_type"]
    assert_same_samples(reference, ours)
    assert_one_weighted_event_per_batch(ours, ours_dir)
    # One series per scheduler process for the default mode (all), by pid.
    retracted = {key for key in samples(ours, ()) if key[0] == "sglang:num_retracted_reqs"}
    assert {dict(labels)["pid"] for _, labels in retracted} == {"scheduler-0", "scheduler-1"}


def test_an_sglang_style_engine_runs_unchanged_but_its_imports_without_start(workdir):
    reference, ours = run_zero_line("sglang_program.py", workdir)
    assert ours["content_type"] == reference["content_type"]
    assert_same_samples(reference, ours)
