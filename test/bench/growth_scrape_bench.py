"""growth_scrape_bench.py — how the costs of a scrape grow with producer
processes N and series per process, measured in one run, beside
prometheus_client's multiprocess mode (docs/performance.md, "How costs grow
with processes and series").

    /usr/bin/python3 test/bench/growth_scrape_bench.py BUILD/test/bench/growth-workload \
        --out DIR [--quick] [--processes 1,4,16,64] [--series 1000,10000,100000]

Each process records S counter series and S/10 histogram series
(prometheus_client's default buckets). For every cell (N, S):

- ours: growth-workload forks N producers writing real run-directory files
  through the host's collector and store; its launcher serves /metrics. The
  figures: the median latency of several scrapes over HTTP on 127.0.0.1
  (identity encoding, one kept-alive connection, after one warm-up scrape),
  the launcher's CPU per scrape (utime + stime of /proc/<pid>/stat over the
  scrapes, divided by their count) and its minor page faults per scrape, the
  exposition's bytes, the launcher's and the producers' VmRSS, and the run
  directory's bytes. The workload also serves the same files merged by the
  earlier paths ("mapped-per-scrape", "before": prometheus_merge.hpp), each
  measured the same way, one after the other (--no-before: only the present).
- prometheus_client: N writer processes (PROMETHEUS_MULTIPROC_DIR) record the
  same series and exit; a fresh process builds a registry with
  MultiProcessCollector and times generate_latest (no HTTP: its latency is
  its CPU); its peak RSS and the directory's bytes are reported too. Measured
  only where N x S <= --pc-limit (default 640,000: about 4 s per scrape).

Cells whose estimated memory exceeds --max-gb (from the measured bytes per
series of the previous cell) are skipped and reported as such. Writes
DIR/growth-scrape.json and the plots DIR/growth-*.png (matplotlib, Agg).
TSM_GROWTH_QUICK=1 (or --quick) runs N in (1, 4), S in (1,000, 10,000).
Asserts nothing about time: every figure is reported, ratios within a cell.
"""
import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

COUNTER_FAMILIES = 20
HISTOGRAM_FAMILIES = 5
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# --- prometheus_client's side (run in processes of their own) ---------------

def pc_writer(series, index):
    """One writer: the workload's series through prometheus_client."""
    from prometheus_client import Counter, Histogram
    from prometheus_client.metrics import Histogram as H
    labels = ["model", "series"]
    counters = [Counter(f"growth_requests_{f}", f"Requests of group {f}.", labels)
                for f in range(COUNTER_FAMILIES)]
    histograms = [Histogram(f"growth_latency_seconds_{f}", f"Latency of group {f}.", labels)
                  for f in range(HISTOGRAM_FAMILIES)]
    for i in range(series):
        counters[i % COUNTER_FAMILIES].labels("llama", f"s{i}").inc(1 + (i + index) % 7)
    buckets = H.DEFAULT_BUCKETS[:-1]
    for i in range(series // 10):
        histograms[i % HISTOGRAM_FAMILIES].labels("llama", f"s{i}").observe(
            buckets[(i + index) % len(buckets)])


def pc_scrape(budget):
    """Times MultiProcessCollector + generate_latest; prints one JSON line."""
    import resource
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector
    registry = CollectorRegistry()
    MultiProcessCollector(registry)
    start = time.perf_counter()
    body = generate_latest(registry)
    warm = time.perf_counter() - start
    count = scrape_count(warm, budget)
    latencies, cpu = [], 0.0
    for _ in range(count):
        c0, t0 = time.process_time(), time.perf_counter()
        body = generate_latest(registry)
        latencies.append(time.perf_counter() - t0)
        cpu += time.process_time() - c0
    print(json.dumps({
        "latency_s": statistics.median(latencies), "latencies_s": latencies,
        "cpu_per_scrape_s": cpu / count, "bytes": len(body), "scrapes": count,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "check": check_value(body.decode()),
    }))


# --- shared helpers ----------------------------------------------------------

def scrape_count(warm_seconds, budget):
    return max(3, min(15, int(budget / max(warm_seconds, 1e-4))))


def check_value(text):
    """The value of growth_requests_0_total{model="llama",series="s0"}."""
    for key in ('growth_requests_0_total{model="llama",series="s0"} ',):
        at = text.find(key)
        if at >= 0:
            return float(text[at + len(key):text.index("\n", at)])
    return None


def expected_check(processes):
    return float(sum(1 + index % 7 for index in range(processes)))


def proc_stat(pid):
    """(utime + stime in seconds, minor faults) of a process."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): minflt is field 10, utime 14, stime 15.
    return (int(fields[11]) + int(fields[12])) / CLK_TCK, int(fields[7])


def memory(pid):
    """VmRSS and its parts (RssAnon: the heap; RssFile: mapped files) in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                out[key] = int(line.split()[1]) * 1024
    return out


def vm_rss(pid):
    return memory(pid).get("VmRSS", 0)


def dir_bytes(path):
    apparent = allocated = files = 0
    for entry in os.scandir(path):
        if entry.is_file(follow_symlinks=False):
            info = entry.stat(follow_symlinks=False)
            apparent += info.st_size
            allocated += info.st_blocks * 512
            files += 1
    return apparent, allocated, files


# --- one cell ----------------------------------------------------------------

def scrape(connection):
    connection.request("GET", "/metrics")
    response = connection.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"/metrics answered {response.status}")
    return body


def measure_endpoint(port, launcher, processes, budget):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start = time.perf_counter()
    body = scrape(connection)
    warm = time.perf_counter() - start
    check = check_value(body.decode())
    if check != expected_check(processes):
        raise RuntimeError(f"merged value {check}, expected {expected_check(processes)}")
    count = scrape_count(warm, budget)
    cpu0, faults0 = proc_stat(launcher)
    latencies = []
    for _ in range(count):
        t0 = time.perf_counter()
        body = scrape(connection)
        latencies.append(time.perf_counter() - t0)
    cpu1, faults1 = proc_stat(launcher)
    connection.close()
    return {
        "latency_s": statistics.median(latencies), "latencies_s": latencies,
        "first_scrape_s": warm, "cpu_per_scrape_s": (cpu1 - cpu0) / count,
        "minor_faults_per_scrape": (faults1 - faults0) / count, "bytes": len(body),
        "scrapes": count, "launcher_rss_bytes": vm_rss(launcher),
        "launcher_memory": memory(launcher),
    }


def run_ours(workload, processes, series, budget, before):
    base = tempfile.mkdtemp(prefix="tsm-growth-")
    started = time.perf_counter()
    proc = subprocess.Popen([workload, str(processes), str(series), base] +
                            (["before"] if before else []),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    endpoints, producers, launcher, run_dir = {}, [], None, None
    try:
        for line in proc.stdout:
            fields = line.split()
            if fields[0] == "endpoint":
                endpoints[fields[1]] = int(fields[2])
            elif fields[0] == "launcher":
                launcher = int(fields[1])
            elif fields[0] == "producer":
                producers.append(int(fields[1]))
            elif fields[0] == "dir":
                run_dir = fields[1]
            elif fields[0] == "ready":
                break
        else:
            raise RuntimeError("growth-workload ended before it was ready")
        setup = time.perf_counter() - started
        out = {"setup_s": setup, "launcher_rss_before_scrapes_bytes": vm_rss(launcher)}
        # Measured in the order printed; the first is the present code.
        out["paths"] = {name: measure_endpoint(port, launcher, processes, budget)
                        for name, port in endpoints.items()}
        rss = [vm_rss(pid) for pid in producers]
        anon = [memory(pid).get("RssAnon", 0) for pid in producers]
        apparent, allocated, files = dir_bytes(run_dir)
        out.update({
            "producer_rss_bytes_total": sum(rss), "producer_rss_bytes_mean": sum(rss) / len(rss),
            "producer_rss_anon_bytes_mean": sum(anon) / len(anon),
            "run_dir_bytes": apparent, "run_dir_allocated_bytes": allocated, "run_dir_files": files,
        })
        return out
    finally:
        try:
            proc.stdin.write("quit\n")
            proc.stdin.flush()
            proc.wait(timeout=120)
        except Exception:
            proc.kill()
            proc.wait()
        shutil.rmtree(base, ignore_errors=True)


def run_pc(processes, series, budget):
    directory = tempfile.mkdtemp(prefix="tsm-growth-pc-")
    env = dict(os.environ, PROMETHEUS_MULTIPROC_DIR=directory)
    me = os.path.abspath(__file__)
    try:
        started = time.perf_counter()
        running = []
        for index in range(processes):  # two writers at a time: the machine's cores
            running.append(subprocess.Popen(
                [sys.executable, me, "--pc-writer", str(series), str(index)], env=env))
            if len(running) == 2:
                if running.pop(0).wait() != 0:
                    raise RuntimeError("a prometheus_client writer failed")
        for writer in running:
            if writer.wait() != 0:
                raise RuntimeError("a prometheus_client writer failed")
        setup = time.perf_counter() - started
        result = subprocess.run([sys.executable, me, "--pc-scrape", str(budget)], env=env,
                                check=True, stdout=subprocess.PIPE, text=True)
        out = json.loads(result.stdout.strip().splitlines()[-1])
        if out["check"] != expected_check(processes):
            raise RuntimeError(f"prometheus_client merged {out['check']}")
        apparent, allocated, files = dir_bytes(directory)
        out.update({"setup_s": setup, "dir_bytes": apparent, "dir_allocated_bytes": allocated,
                    "dir_files": files})
        return out
    finally:
        shutil.rmtree(directory, ignore_errors=True)


# --- the grid, the table, the plots ------------------------------------------

def series_per_process(series):
    return series + series // 10


def human(value, unit=""):
    for factor, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {suffix}{unit}"
    return f"{value:.3g} {unit}"


def ms(seconds):
    return f"{seconds * 1e3:.3g} ms" if seconds is not None else "-"


def print_table(cells):
    print("| N | S | series/process | ours: latency | CPU/scrape | bytes | prometheus_client | "
          "ratio | launcher RSS/series | producer RSS/series | run dir bytes/series |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for cell in cells:
        n, s = cell["processes"], cell["series"]
        if "skipped" in cell:
            print(f"| {n} | {s} | {series_per_process(s)} | skipped: {cell['skipped']} |")
            continue
        ours = cell["ours"]["paths"]["current"]
        pc = cell.get("prometheus_client")
        per = series_per_process(s)
        ratio = f"{pc['latency_s'] / ours['latency_s']:.1f}x" if pc else "-"
        pc_text = ms(pc["latency_s"]) if pc else cell.get("prometheus_client_skipped", "-")
        print(f"| {n} | {s} | {per} | {ms(ours['latency_s'])} | {ms(ours['cpu_per_scrape_s'])} | "
              f"{human(ours['bytes'], 'B')} | {pc_text} | {ratio} | "
              f"{ours['launcher_rss_bytes'] / per:.0f} | "
              f"{cell['ours']['producer_rss_bytes_mean'] / per:.0f} | "
              f"{cell['ours']['run_dir_bytes'] / (n * per):.0f} |")
    paths = {p for c in cells if "ours" in c for p in c["ours"]["paths"]}
    for other in sorted(paths - {"current"}):
        print(f"\nthe same files, path '{other}' against 'current' (latency, CPU per scrape):")
        for cell in cells:
            if "ours" not in cell or other not in cell["ours"]["paths"]:
                continue
            a, b = cell["ours"]["paths"][other], cell["ours"]["paths"]["current"]
            print(f"| {cell['processes']} | {cell['series']} | {ms(a['latency_s'])} -> "
                  f"{ms(b['latency_s'])} | {ms(a['cpu_per_scrape_s'])} -> "
                  f"{ms(b['cpu_per_scrape_s'])} | {a['latency_s'] / b['latency_s']:.2f}x |")


def plot(cells, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    done = [c for c in cells if "ours" in c]
    processes = sorted({c["processes"] for c in done})
    colors = dict(zip(processes, plt.rcParams["axes.prop_cycle"].by_key()["color"]))

    def lines(ax, pick_ours, pick_pc, ylabel, title, path_name="current"):
        for n in processes:
            row = sorted((c for c in done if c["processes"] == n), key=lambda c: c["series"])
            xs = [series_per_process(c["series"]) for c in row]
            ax.plot(xs, [pick_ours(c, c["ours"]["paths"][path_name]) for c in row], "o-",
                    color=colors[n], label=f"N={n} ours")
            pcs = [c for c in row if "prometheus_client" in c]
            if pick_pc and pcs:
                ax.plot([series_per_process(c["series"]) for c in pcs],
                        [pick_pc(c, c["prometheus_client"]) for c in pcs], "s--",
                        color=colors[n], label=f"N={n} prometheus_client")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("series per process (S counters + S/10 histograms)")
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)

    figures = {
        "growth-scrape-latency.png": (
            lambda c, p: p["latency_s"] * 1e3, lambda c, p: p["latency_s"] * 1e3,
            "ms per scrape (median)",
            "Scrape latency: ours over HTTP (solid), prometheus_client generate_latest (dashed)"),
        "growth-scrape-cpu.png": (
            lambda c, p: p["cpu_per_scrape_s"] * 1e3, lambda c, p: p["cpu_per_scrape_s"] * 1e3,
            "CPU ms per scrape", "CPU per scrape: launcher (solid), prometheus_client (dashed)"),
        "growth-scrape-bytes.png": (
            lambda c, p: p["bytes"], lambda c, p: p["bytes"], "exposition bytes",
            "Exposition bytes (the same series: the lines overlap)"),
    }
    for name, (ours_pick, pc_pick, ylabel, title) in figures.items():
        fig, ax = plt.subplots(figsize=(8, 5.5))
        lines(ax, ours_pick, pc_pick, ylabel, title)
        fig.tight_layout()
        fig.savefig(os.path.join(out, name), dpi=90)
        plt.close(fig)

    fig, axes = plt.subplots(1, 3, figsize=(15, 5))
    per = series_per_process
    lines(axes[0], lambda c, p: p["launcher_memory"]["RssAnon"] / per(c["series"]),
          lambda c, p: p["peak_rss_bytes"] / per(c["series"]),
          "bytes per merged series", "Launcher RssAnon per series (pc: scraper peak RSS)")
    lines(axes[1], lambda c, p: c["ours"]["producer_rss_bytes_mean"] / per(c["series"]), None,
          "bytes per series of a producer", "Producer RSS per series")
    lines(axes[2], lambda c, p: c["ours"]["run_dir_bytes"] / (c["processes"] * per(c["series"])),
          lambda c, p: p["dir_bytes"] / (c["processes"] * per(c["series"])),
          "bytes per series of a process", "Run-directory bytes per series")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "growth-memory.png"), dpi=80)
    plt.close(fig)

    paths = sorted({p for c in done for p in c["ours"]["paths"]} - {"current"})
    if paths:
        fig, ax = plt.subplots(figsize=(8, 5.5))
        for n in processes:
            row = sorted((c for c in done if c["processes"] == n), key=lambda c: c["series"])
            xs = [per(c["series"]) for c in row]
            ax.plot(xs, [c["ours"]["paths"]["current"]["cpu_per_scrape_s"] * 1e3 for c in row],
                    "o-", color=colors[n], label=f"N={n} now")
            for other in paths:
                ax.plot(xs, [c["ours"]["paths"][other]["cpu_per_scrape_s"] * 1e3 for c in row],
                        "x:", color=colors[n], label=f"N={n} {other}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("series per process")
        ax.set_ylabel("launcher CPU ms per scrape")
        ax.set_title("The same files, the same run: now (solid) and " + ", ".join(paths) +
                     " (dotted)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "growth-scrape-before-after.png"), dpi=90)
        plt.close(fig)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--pc-writer":
        return pc_writer(int(sys.argv[2]), int(sys.argv[3]))
    if len(sys.argv) > 1 and sys.argv[1] == "--pc-scrape":
        return pc_scrape(float(sys.argv[2]))
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("workload")
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true",
                        default=os.environ.get("TSM_GROWTH_QUICK", "") not in ("", "0"))
    parser.add_argument("--processes")
    parser.add_argument("--series")
    parser.add_argument("--budget", type=float, default=8.0,
                        help="seconds of scrapes per cell and path (3 to 15 scrapes)")
    parser.add_argument("--pc-limit", type=int, default=640_000,
                        help="largest N x S measured for prometheus_client")
    parser.add_argument("--max-gb", type=float, default=6.0)
    parser.add_argument("--pc-max-seconds", type=float, default=20.0,
                        help="skip prometheus_client where its scrape would take longer "
                             "(estimated from the previous N, linear in N)")
    parser.add_argument("--no-pc", action="store_true")
    parser.add_argument("--no-before", action="store_true",
                        help="measure the present merge only, not the path before as well")
    args = parser.parse_args()
    processes = [1, 4] if args.quick else [1, 4, 16, 64]
    series = [1000, 10000] if args.quick else [1000, 10000, 100000]
    if args.processes:
        processes = [int(x) for x in args.processes.split(",")]
    if args.series:
        series = [int(x) for x in args.series.split(",")]
    os.makedirs(args.out, exist_ok=True)

    cells = []
    started = time.time()
    load_before = os.getloadavg()
    for s in series:
        previous = pc_previous = None
        for n in processes:
            cell = {"processes": n, "series": s}
            cells.append(cell)
            if previous is not None:
                scale = n / previous["processes"]
                estimate = scale * (previous["ours"]["producer_rss_bytes_total"] +
                                    previous["ours"]["run_dir_bytes"])
                if estimate > args.max_gb * 1e9:
                    cell["skipped"] = (f"estimated {estimate / 1e9:.1f} GB of producer RSS and "
                                       f"run directory (over {args.max_gb:g} GB)")
                    print(f"N={n} S={s}: {cell['skipped']}", flush=True)
                    continue
            cell["ours"] = run_ours(args.workload, n, s, args.budget, not args.no_before)
            previous = cell
            ours = cell["ours"]["paths"]["current"]
            print(f"N={n} S={s}: ours {ms(ours['latency_s'])} (CPU {ms(ours['cpu_per_scrape_s'])}, "
                  f"{human(ours['bytes'], 'B')}; setup {cell['ours']['setup_s']:.1f} s)", flush=True)
            for name, path in cell["ours"]["paths"].items():
                if name != "current":
                    print(f"    path {name}: {ms(path['latency_s'])} "
                          f"(CPU {ms(path['cpu_per_scrape_s'])})", flush=True)
            if args.no_pc:
                continue
            if n * s > args.pc_limit:
                cell["prometheus_client_skipped"] = f"not run (N x S > {args.pc_limit:,})"
                continue
            if pc_previous is not None:
                estimate = pc_previous["latency_s"] * n / pc_previous["processes"]
                if estimate > args.pc_max_seconds:
                    cell["prometheus_client_skipped"] = f"not run (about {estimate:.0f} s a scrape)"
                    continue
            cell["prometheus_client"] = run_pc(n, s, args.budget)
            pc = cell["prometheus_client"]
            pc_previous = dict(pc, processes=n)
            print(f"    prometheus_client {ms(pc['latency_s'])} ({human(pc['bytes'], 'B')}; "
                  f"setup {pc['setup_s']:.1f} s)", flush=True)

    result = {
        "grid": {"processes": processes, "series": series, "quick": args.quick},
        "machine": {"cpus": os.cpu_count(), "load_before": load_before,
                    "load_after": os.getloadavg()},
        "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
        "elapsed_s": time.time() - started,
        "cells": cells,
    }
    with open(os.path.join(args.out, "growth-scrape.json"), "w") as f:
        json.dump(result, f, indent=1)
    print_table(cells)
    plot(cells, args.out)
    print(f"wrote {args.out}/growth-scrape.json and its plots", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
