"""SGLang's and vLLM's call shapes, unchanged, on tokenspeed_metrics with a
views file (--metrics-views) and on python3-prometheus-client with what the
views say written into the code (reference_client.py reads the same file
at the Histogram constructor): every sample of /metrics is equal, compared
as test_engine_patterns.py compares them.

- Rebucketed: both engines' time-to-first-token histograms get sub-300 ms
  buckets. SGLang's tokenizer reads that histogram's buckets back (its
  straggler check) and records its inter-token latency with the batched
  _sum/_buckets[i] idiom.
- Renamed with a label dropped: vLLM's time to first token gets another
  name and loses its engine label (the engines of two API servers sum into
  one series); SGLang's inter-token latency, which the idiom records, is
  rebucketed and loses its model_name label."""
import json
import os

from test_engine_patterns import assert_same_samples, jsonl_flags, run_program, samples

# 3.5 makes SGLang's straggler check flag its last straggler (4.45 s): a
# check that read the buckets wrong would not.
SUB_300_MS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.3, 0.5, 1, 2.5, 3.5, 5]
ITL_BUCKETS = [0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.02, 0.05]

REBUCKETED = {"views": [
    {"select": {"name": "sglang:time_to_first_token_seconds"}, "buckets": SUB_300_MS},
    {"select": {"name": "vllm:time_to_first_token_seconds"}, "buckets": SUB_300_MS},
]}
RENAMED_AND_DROPPED = {"views": [
    {"select": {"name": "vllm:time_to_first_token_seconds"}, "buckets": SUB_300_MS,
     "name": "llm:time_to_first_token_seconds", "drop_labels": ["engine"]},
    {"select": {"name": "sglang:inter_token_latency_seconds"}, "buckets": ITL_BUCKETS,
     "drop_labels": ["model_name"]},
]}
VLLM_CLOCK = {"vllm:lora_requests_info"}


def run_with_views(program, workdir, views):
    """The program on prometheus_client with the views written into its
    histograms, and on tokenspeed_metrics given the views file (and a jsonl
    output, as in test_engine_patterns.py)."""
    path = os.path.join(workdir, "views.json")
    with open(path, "w") as out:
        json.dump(views, out)
    reference_dir = os.path.join(workdir, "reference")
    ours_dir = os.path.join(workdir, "ours")
    os.mkdir(reference_dir)
    os.mkdir(ours_dir)
    reference, _ = run_program(program, "prometheus_client", reference_dir,
                               extra_env={"ENGINE_PATTERNS_VIEWS": path})
    ours, _ = run_program(program, "tokenspeed_metrics", ours_dir,
                          jsonl_flags(ours_dir) + ["--metrics-views", path])
    return reference, ours


def bounds_of(run, family):
    """The le values of a family's _bucket samples, +Inf left out."""
    return sorted({float(dict(labels)["le"]) for (name, labels) in samples(run, ())
                   if name == family + "_bucket"} - {float("inf")})


def label_names_of(run, family):
    return {tuple(sorted(dict(labels))) for (name, labels) in samples(run, ())
            if name == family + "_count"}


def test_sglangs_rebucketed_time_to_first_token_equals_prometheus_client_with_those_buckets(
        workdir):
    reference, ours = run_with_views("sglang_program.py", workdir, REBUCKETED)
    assert bounds_of(ours, "sglang:time_to_first_token_seconds") == SUB_300_MS
    assert_same_samples(reference, ours)
    # The straggler check, reading the rebucketed histogram, flagged one.
    flagged = ("engine_patterns:straggler_verdicts_total", (("straggler", "True"),))
    assert samples(ours, ())[flagged] == 1


def test_vllms_rebucketed_time_to_first_token_equals_prometheus_client_with_those_buckets(
        workdir):
    reference, ours = run_with_views("vllm_program.py", workdir, REBUCKETED)
    assert bounds_of(ours, "vllm:time_to_first_token_seconds") == SUB_300_MS
    assert_same_samples(reference, ours, VLLM_CLOCK)
    assert_same_samples(dict(reference, exposition=reference["after_exit"]),
                        dict(ours, exposition=ours["after_exit"]), VLLM_CLOCK)


def test_a_renamed_family_without_its_engine_label_equals_prometheus_client_recording_so(
        workdir):
    reference, ours = run_with_views("vllm_program.py", workdir, RENAMED_AND_DROPPED)
    assert bounds_of(ours, "llm:time_to_first_token_seconds") == SUB_300_MS
    assert bounds_of(ours, "vllm:time_to_first_token_seconds") == []
    assert label_names_of(ours, "llm:time_to_first_token_seconds") == {("model_name",)}
    assert_same_samples(reference, ours, VLLM_CLOCK)


def test_the_idioms_histogram_rebucketed_without_its_label_equals_prometheus_client_recording_so(
        workdir):
    reference, ours = run_with_views("sglang_program.py", workdir, RENAMED_AND_DROPPED)
    assert bounds_of(ours, "sglang:inter_token_latency_seconds") == ITL_BUCKETS
    assert label_names_of(ours, "sglang:inter_token_latency_seconds") == {()}
    assert_same_samples(reference, ours)
