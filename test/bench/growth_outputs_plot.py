"""growth_outputs_plot.py — runs the benchmarks of "how costs grow with
outputs, threads and series per export" (docs/performance.md) and writes
their figures as JSON, markdown tables and PNG plots:

- growth-outputs-bench: the record path against the number of external
  outputs (0, 1, 2, 4, 8) and of producer threads (1, 2, 4);
- BM_ExportCpu of otlp-bench, remote-write-bench and statsd-bench: the CPU
  one export costs in the plugin at 1,000 / 10,000 / 100,000 series.

    /usr/bin/python3 test/bench/growth_outputs_plot.py build-bench \\
        --repetitions 3 --out docs/performance

Medians over the repetitions. Writes OUT/growth-outputs.json,
OUT/growth-outputs-record.png, OUT/growth-outputs-delivered.png and
OUT/growth-plugins-export-cpu.png, and prints the tables. --from-json
redraws the plots and tables from a JSON written before.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import numpy

PLUGINS = (("otlp", "otlp-bench", "collect, encode, gzip"),
           ("remote_write", "remote-write-bench", "collect, encode, snappy"),
           ("statsd", "statsd-bench", "collect, format, pack"))


def run(binary, bench_filter, args, out, min_time=None):
    subprocess.run([binary, f"--benchmark_filter={bench_filter}",
                    f"--benchmark_min_time={min_time or args.min_time}",
                    f"--benchmark_repetitions={args.repetitions}",
                    "--benchmark_format=json", f"--benchmark_out={out}"],
                   stdout=subprocess.DEVNULL, check=True)
    with open(out) as file:
        data = json.load(file)
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "iteration" and "error_occurred" not in b:
            runs.setdefault(b["run_name"], []).append(b)
    return runs, data["context"]


def median(runs, key):
    return statistics.median(b[key] for b in runs)


def record_rows(runs):
    rows = []
    for name, reps in runs.items():
        if not name.startswith("BM_Growth"):
            continue
        kind = "counter inc" if "Counter" in name else "histogram observe"
        outputs = int(re.search(r"outputs:(\d+)", name).group(1))
        threads = int(re.search(r"threads:(\d+)", name).group(1))
        batch = reps[0]["events_per_iteration"]
        row = {
            "mode": "full speed" if "FullSpeed" in name else "batched",
            "kind": kind, "outputs": outputs, "threads": threads,
            # the producer's own CPU per event (every thread's CPU over every event)
            "cpu_ns_per_event": median(reps, "cpu_time") / batch,
            # wall time per event of one producer thread while it records
            "wall_ns_per_event_per_thread": median(reps, "real_time") * threads / batch,
            # events recorded per second by all threads together while they record
            "events_per_s": median(reps, "items_per_second"),
            "drop_ratio": median(reps, "drop_ratio") if "drop_ratio" in reps[0] else 0.0,
            "ring_bytes": reps[0].get("ring_bytes", 0.0),
        }
        if row["mode"] == "full speed" and outputs > 0:
            # what every output received per second, together, and the
            # delivery threads' CPU (the process's, less the producers') per delivery
            row["delivered_per_s"] = statistics.median(b["delivered"] / b["wall_s"] for b in reps)
            row["worker_cpu_ns_per_delivered"] = statistics.median(
                (b["process_cpu_s"] - b["cpu_time"] * b["iterations"] * 1e-9) * 1e9
                / b["delivered"] for b in reps)
        rows.append(row)
    rows.sort(key=lambda r: (r["mode"], r["kind"], r["threads"], r["outputs"]))
    return rows


def store_rows(runs):
    """BM_StoreCounterInc: the in-process store against the producers' file store."""
    rows = []
    for name, reps in runs.items():
        if not name.startswith("BM_Store"):
            continue
        batch = reps[0]["events_per_iteration"]
        rows.append({
            "outputs": int(re.search(r"outputs:(\d+)", name).group(1)),
            "store": "file" if "file_store:1" in name else "in-process",
            "threads": int(re.search(r"threads:(\d+)", name).group(1)),
            "cpu_ns_per_event": median(reps, "cpu_time") / batch,
        })
    rows.sort(key=lambda r: (r["outputs"], r["store"], r["threads"]))
    return rows


def placement_rows(runs):
    """BM_RingPlacement*: ring slot arrays mapped one each against on the heap."""
    rows = []
    for name, reps in runs.items():
        if not name.startswith("BM_RingPlacement"):
            continue
        rows.append({
            "kind": "counter inc" if "Counter" in name else "histogram observe",
            "outputs": int(re.search(r"outputs:(\d+)", name).group(1)),
            "rings": "heap" if "heap:1" in name else "one mapping each",
            "cpu_ns_per_event": median(reps, "cpu_time") / reps[0]["events_per_iteration"],
        })
    rows.sort(key=lambda r: (r["kind"], r["outputs"], r["rings"]))
    return rows


def plugin_rows(build, args, tmp):
    rows = []
    for plugin, program, steps in PLUGINS:
        binary = os.path.join(build, "test", "bench", program)
        if not os.path.exists(binary):
            continue
        runs, _ = run(binary, "BM_ExportCpu", args, os.path.join(tmp, plugin + ".json"),
                      args.plugin_min_time)
        for name, reps in runs.items():
            series = int(re.search(r"series:(\d+)", name).group(1))
            unit = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[reps[0]["time_unit"]]
            row = {"plugin": plugin, "steps": steps, "series": series,
                   "cpu_ms_per_export": median(reps, "cpu_time") * unit,
                   "wall_ms_per_export": median(reps, "real_time") * unit}
            row["cpu_us_per_series"] = row["cpu_ms_per_export"] * 1e3 / series
            for extra in ("gzip_bytes", "snappy_bytes", "bytes", "requests", "datagrams",
                          "samples_per_push"):
                if extra in reps[0]:
                    row[extra] = reps[0][extra]
            rows.append(row)
    rows.sort(key=lambda r: (r["plugin"], r["series"]))
    return rows


def pivot(record, mode, cell):
    """One row per number of outputs, one column per event kind and thread count."""
    keys = sorted({(r["kind"], r["threads"]) for r in record if r["mode"] == mode})
    lines = ["| outputs | " + " | ".join(f"{kind}, {t} thr." for kind, t in keys) + " |",
             "|---" * (len(keys) + 1) + "|"]
    for outputs in sorted({r["outputs"] for r in record}):
        cells = []
        for kind, t in keys:
            row = [r for r in record if r["mode"] == mode and r["kind"] == kind
                   and r["threads"] == t and r["outputs"] == outputs]
            cells.append(cell(row[0]) if row else "-")
        lines.append(f"| {outputs} | " + " | ".join(cells) + " |")
    return lines


def tables(result):
    record = result["record"]
    lines = ["Producer CPU per event, ns (batched: every push finds room):", ""]
    lines += pivot(record, "batched", lambda r: f"{r['cpu_ns_per_event']:.1f}")
    lines += ["", "Wall time per event of one producer thread, ns (batched):", ""]
    lines += pivot(record, "batched", lambda r: f"{r['wall_ns_per_event_per_thread']:.1f}")
    lines += ["", "Drop ratio (batched):", ""]
    lines += pivot(record, "batched", lambda r: f"{r['drop_ratio'] * 100:.2f} %")
    lines += ["", "Ring memory (threads x outputs x slots x 16 B):", ""]
    lines += pivot(record, "batched", lambda r: f"{r['ring_bytes'] / 2**20:.2f} MiB")
    lines += ["", "Producer CPU per event against outputs (1-8), least squares (batched):", ""]
    for kind, t in sorted({(r["kind"], r["threads"]) for r in record}):
        points = sorted((r["outputs"], r["cpu_ns_per_event"]) for r in record
                        if r["mode"] == "batched" and r["kind"] == kind and r["threads"] == t
                        and r["outputs"] >= 1)
        slope, intercept = numpy.polyfit([p[0] for p in points], [p[1] for p in points], 1)
        lines.append(f"- {kind}, {t} thread(s): {intercept:.1f} ns + {slope:.1f} ns per output")
    lines += ["", "Full speed: events/s received by all outputs together, drop ratio, "
              "delivery threads' CPU ns per delivered event:", ""]
    lines += pivot(record, "full speed",
                   lambda r: "-" if "delivered_per_s" not in r else
                   f"{r['delivered_per_s'] / 1e6:.1f} M, {r['drop_ratio'] * 100:.0f} %, "
                   f"{r['worker_cpu_ns_per_delivered']:.0f}")
    lines += ["", "Full speed: events/s recorded by all threads together:", ""]
    lines += pivot(record, "full speed", lambda r: f"{r['events_per_s'] / 1e6:.1f} M")
    if result.get("store"):
        lines += ["", "| outputs | store | threads | producer CPU ns/event |", "|---|---|---|---|"]
        for r in result["store"]:
            lines.append(f"| {r['outputs']} | {r['store']} | {r['threads']} "
                         f"| {r['cpu_ns_per_event']:.1f} |")
    if result.get("placement"):
        lines += ["", "| event | outputs | ring slot arrays | producer CPU ns/event |",
                  "|---|---|---|---|"]
        for r in result["placement"]:
            lines.append(f"| {r['kind']} | {r['outputs']} | {r['rings']} "
                         f"| {r['cpu_ns_per_event']:.1f} |")
    lines += ["", "| plugin | what | series | CPU ms per export | CPU us per series | wall ms |",
              "|---|---|---|---|---|---|"]
    for r in result["plugins"]:
        lines.append(f"| {r['plugin']} | {r['steps']} | {r['series']:,} "
                     f"| {r['cpu_ms_per_export']:.2f} | {r['cpu_us_per_series']:.2f} "
                     f"| {r['wall_ms_per_export']:.2f} |")
    return "\n".join(lines)


def plot(result, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    record = result["record"]
    kinds = sorted({r["kind"] for r in record})
    threads = sorted({r["threads"] for r in record})
    for figure_name, mode, key, label in (
            ("growth-outputs-record.png", "batched", "cpu_ns_per_event",
             "producer CPU, ns per event"),
            ("growth-outputs-delivered.png", "full speed", "delivered_per_s",
             "events/s received, all outputs together")):
        fig, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4), squeeze=False)
        for axis, kind in zip(axes[0], kinds):
            for t in threads:
                points = sorted((r["outputs"], r[key]) for r in record
                                if r["mode"] == mode and r["kind"] == kind
                                and r["threads"] == t and key in r)
                axis.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                          label=f"{t} thread{'s' if t > 1 else ''}")
            axis.set_title(kind)
            axis.set_xlabel("external outputs")
            axis.set_ylabel(label)
            axis.set_xticks([0, 1, 2, 4, 8])
            axis.set_ylim(bottom=0)
            axis.grid(True, alpha=0.3)
            axis.legend()
        fig.suptitle(result.get("machine", ""), fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(out, figure_name), dpi=100)
        plt.close(fig)

    fig, axis = plt.subplots(figsize=(6, 4.5))
    for plugin in sorted({r["plugin"] for r in result["plugins"]}):
        points = [(r["series"], r["cpu_ms_per_export"]) for r in result["plugins"]
                  if r["plugin"] == plugin]
        axis.loglog([p[0] for p in points], [p[1] for p in points], marker="o", label=plugin)
    # Linear growth for comparison: a slope of one through the median 10,000-series point.
    anchors = [r["cpu_ms_per_export"] for r in result["plugins"] if r["series"] == 10_000]
    if anchors:
        anchor = statistics.median(anchors)
        axis.loglog([1_000, 100_000], [anchor / 10, anchor * 10], linestyle="--", color="grey",
                    label="linear in series")
    axis.set_xlabel("series per export")
    axis.set_ylabel("plugin CPU per export, ms")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend()
    axis.set_title("one export's CPU (no network)")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "growth-plugins-export-cpu.png"), dpi=100)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("build", nargs="?", default="build-bench",
                        help="a build configured with -Dbenchmarks=true")
    parser.add_argument("--out", default="docs/performance", help="folder of the JSON and PNGs")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--min-time", default="0.2")
    parser.add_argument("--plugin-min-time", default="1.0",
                        help="of BM_ExportCpu: an export of 100,000 series takes up to a second")
    parser.add_argument("--filter", default=".", help="of the growth-outputs-bench cases")
    parser.add_argument("--from-json", help="redraw from this JSON instead of running")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.from_json:
        with open(args.from_json) as file:
            result = json.load(file)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            runs, context = run(os.path.join(args.build, "test", "bench", "growth-outputs-bench"),
                                args.filter, args, os.path.join(tmp, "growth.json"))
            result = {
                "machine": f"{context.get('num_cpus')} CPUs at {context.get('mhz_per_cpu')} MHz, "
                           f"{context.get('date')}, load average "
                           f"{[round(x, 2) for x in context.get('load_avg', [])]}",
                "repetitions": args.repetitions, "min_time": args.min_time,
                "plugin_min_time": args.plugin_min_time,
                "record": record_rows(runs),
                "store": store_rows(runs),
                "placement": placement_rows(runs),
                "plugins": plugin_rows(args.build, args, tmp),
            }
        with open(os.path.join(args.out, "growth-outputs.json"), "w") as file:
            json.dump(result, file, indent=1)
    plot(result, args.out)
    print(tables(result))


if __name__ == "__main__":
    main()
