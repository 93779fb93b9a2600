"""compare_benchmarks.py — runs builds of one Google Benchmark program
alternately (so the machine's drift falls on each alike) and prints, per
benchmark, the median real time over every repetition of every round, with
items/s, the drop ratio (dropped_ring_full / (delivered + dropped_ring_full);
an older build names it dropped_full) and the
pipeline's own counters where the benchmark reports them.

    /usr/bin/python3 test/bench/compare_benchmarks.py \\
        before=/path/to/old/pipeline-bench now=build-bench/test/bench/pipeline-bench \\
        --rounds 3 --repetitions 3 --filter 'OneOutput|Mutex'
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

COUNTERS = ("p99.9_ns", "identity_exact", "rss_kib_growth_after_10pct", "worker_ns_per_event")


def run(binary, args, out):
    subprocess.run([binary, f"--benchmark_filter={args.filter}",
                    f"--benchmark_min_time={args.min_time}",
                    f"--benchmark_repetitions={args.repetitions}",
                    "--benchmark_format=json", f"--benchmark_out={out}"],
                   stdout=subprocess.DEVNULL, check=True)
    with open(out) as file:
        return [b for b in json.load(file)["benchmarks"] if b.get("run_type") == "iteration"]


def cell(runs):
    text = f"{statistics.median(b['real_time'] for b in runs):.1f} {runs[0]['time_unit']}"
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
            text += f" {counter}={statistics.median(b[counter] for b in runs):.1f}"
    return text


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("builds", nargs="+", help="tag=path of a benchmark program")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--min-time", default="0.2")
    parser.add_argument("--filter", default=".")
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
    print("| benchmark | " + " | ".join(tag for tag, _ in builds) + " |")
    print("|---" * (len(builds) + 1) + "|")
    for name in order:
        cells = [cell(results[tag][name]) if name in results[tag] else "-" for tag, _ in builds]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
