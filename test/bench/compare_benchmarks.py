"""compare_benchmarks.py — runs builds of one Google Benchmark program
alternately (so the machine's drift falls on each alike) and prints, per
benchmark, the median real time over every repetition of every round, with
items/s, the drop ratio (dropped_ring_full / (delivered + dropped_ring_full);
an older build names it dropped_full) and the
pipeline's own counters where the benchmark reports them (views-bench's
paired ratio among them). A benchmark that
records a batch per iteration (its events_per_iteration counter) is shown
per event.

    /usr/bin/python3 test/bench/compare_benchmarks.py \\
        before=/path/to/old/pipeline-bench now=build-bench/test/bench/pipeline-bench \\
        --rounds 3 --repetitions 3 --filter 'OneOutput|Mutex'

--ratio-to CASE divides, within each build, every benchmark by the one whose
name has CASE in the place of its own case (views-bench's
BM_Views_CounterInc_OneOutput/rename/real_time by .../none/real_time): the
ratios of one run, medians of real and CPU time, beside the times.

    /usr/bin/python3 test/bench/compare_benchmarks.py \\
        views=build-bench/test/bench/views-bench --rounds 1 --repetitions 5 \\
        --interleave --ratio-to none
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

COUNTERS = ("p99.9_ns", "identity_exact", "rss_kib_growth_after_10pct", "worker_ns_per_event",
            "plain_ns", "viewed_ns", "ratio")


def run(binary, args, out):
    interleave = ["--benchmark_enable_random_interleaving=true"] if args.interleave else []
    subprocess.run([binary, f"--benchmark_filter={args.filter}",
                    f"--benchmark_min_time={args.min_time}",
                    f"--benchmark_repetitions={args.repetitions}", *interleave,
                    "--benchmark_format=json", f"--benchmark_out={out}"],
                   stdout=subprocess.DEVNULL, check=True)
    with open(out) as file:
        return [b for b in json.load(file)["benchmarks"] if b.get("run_type") == "iteration"]


def median_time(runs, key):
    """The median of real_time or cpu_time, per event for a batched benchmark."""
    return statistics.median(b[key] / b.get("events_per_iteration", 1) for b in runs)


def cell(runs):
    per = " per event" if "events_per_iteration" in runs[0] else ""
    text = f"{median_time(runs, 'real_time'):.1f} {runs[0]['time_unit']}{per}"
    rates = [b["items_per_second"] for b in runs if "items_per_second" in b]
    if rates:
        text += f" {statistics.median(rates) / 1e6:.1f} M/s"
    dropped = [(b, b.get("dropped_ring_full", b.get("dropped_full"))) for b in runs]
    ratios = [d / (b["delivered"] + d) for b, d in dropped
              if d is not None and b["delivered"] + d > 0]
    if ratios:
        text += f" drop {statistics.median(ratios) * 100:.2f}%"
    for counter in COUNTERS:
        if counter in runs[0]:
            digits = 3 if counter == "ratio" else 1
            text += f" {counter}={statistics.median(b[counter] for b in runs):.{digits}f}"
    return text


def baseline_name(name, case, names):
    """The benchmark name with case in the place of one of its parts (None
    when name is the baseline itself or has none)."""
    parts = name.split("/")
    if case in parts:
        return None
    for i in range(1, len(parts)):
        candidate = "/".join(parts[:i] + [case] + parts[i + 1:])
        if candidate in names:
            return candidate
    return None


def ratio_cell(runs, baseline):
    real = median_time(runs, "real_time") / median_time(baseline, "real_time")
    cpu = median_time(runs, "cpu_time") / median_time(baseline, "cpu_time")
    return f"{real:.3f} (CPU {cpu:.3f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs="+", help="tag=path of a benchmark program")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--min-time", default="0.2")
    parser.add_argument("--filter", default=".")
    parser.add_argument("--interleave", action="store_true",
                        help="run the repetitions of all benchmarks in a random order")
    parser.add_argument("--ratio-to", metavar="CASE",
                        help="add each build's ratio to the benchmark of case CASE")
    args = parser.parse_args()
    builds = [build.split("=", 1) for build in args.builds]
    results = {tag: {} for tag, _ in builds}
    order = []
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for tag, binary in builds:
                for b in run(binary, args, os.path.join(tmp, f"{tag}-{round_}.json")):
                    if b["run_name"] not in order:
                        order.append(b["run_name"])
                    results[tag].setdefault(b["run_name"], []).append(b)
    headers = [tag for tag, _ in builds]
    if args.ratio_to:
        headers += [f"{tag} / {args.ratio_to}" for tag, _ in builds]
    print("| benchmark | " + " | ".join(headers) + " |")
    print("|---" * (len(headers) + 1) + "|")
    for name in order:
        cells = [cell(results[tag][name]) if name in results[tag] else "-" for tag, _ in builds]
        if args.ratio_to:
            for tag, _ in builds:
                base = baseline_name(name, args.ratio_to, results[tag])
                cells.append(ratio_cell(results[tag][name], results[tag][base])
                             if name in results[tag] and base else "-")
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
