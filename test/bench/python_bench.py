"""tokenspeed_metrics against prometheus_client, measured side by side in one
run (docs/performance.md). Run with Debian's interpreter, the package and the
extension on PYTHONPATH:

    PYTHONPATH=host/python:build/host/python /usr/bin/python3 test/bench/python_bench.py

or in a pip-installed environment of any interpreter, prometheus_client taken
from Debian's dist-packages (test/python_package/test_package.py --bench,
docs/packaging.md).

Each figure is the best of 5 timeit repeats, in nanoseconds per call (per
observation for the bulk calls). prometheus_client's multiprocess mode runs in
a child process of its own (it reads PROMETHEUS_MULTIPROC_DIR at import)."""
import json
import os
import subprocess
import sys
import tempfile
import timeit

N = 200_000
REPEATS = 5


def best_ns(statement, namespace, number=N):
    return min(timeit.repeat(statement, globals=namespace, number=number, repeat=REPEATS)) / number * 1e9


def prometheus_client_figures():
    from prometheus_client import Counter, Histogram
    counter = Counter("bench_requests", "Requests.", ["model"])
    histogram = Histogram("bench_latency_seconds", "Latency.", ["model"])
    child = counter.labels("llama")
    hchild = histogram.labels("llama")
    values = [0.001 * (i % 100) for i in range(1000)]
    namespace = {"counter": counter, "child": child, "hchild": hchild, "values": values}
    return {
        "cached child inc()": best_ns("child.inc()", namespace),
        "labels(...).inc()": best_ns('counter.labels("llama").inc()', namespace),
        "labels(model=...).inc()": best_ns('counter.labels(model="llama").inc()', namespace),
        "histogram observe()": best_ns("hchild.observe(0.02)", namespace),
        "loop of observe() per observation":
            best_ns("for v in values: hchild.observe(v)", namespace, number=N // 1000) / 1000,
    }


def ours(outputs):
    import tokenspeed_metrics as tsm
    flags = ["--enable-metrics", "--metrics-port", "0"]
    if outputs:
        flags += ["--metrics-reporters", "prometheus," + outputs[0],
                  "--metrics-reporter-config", outputs[1], "--metrics-plugin-dir", outputs[2]]
    tsm.start(flags)
    counter = tsm.Counter("bench:requests", "Requests.", ["model"])
    histogram = tsm.Histogram("bench:latency_seconds", "Latency.", ["model"])
    child = counter.labels("llama")
    hchild = histogram.labels("llama")
    values = [0.001 * (i % 100) for i in range(1000)]
    namespace = {"counter": counter, "child": child, "hchild": hchild, "values": values}
    from tokenspeed_metrics import prometheus_client as compat
    compat_counter = compat.Counter("bench:compat_requests", "Requests.", ["model"])
    namespace.update(compat_counter=compat_counter, compat_child=compat_counter.labels("llama"))
    figures = {
        "cached child inc()": best_ns("child.inc()", namespace),
        "prometheus_client module: cached child inc()": best_ns("compat_child.inc()", namespace),
        "prometheus_client module: labels(model=...).inc()":
            best_ns('compat_counter.labels(model="llama").inc()', namespace),
        "labels(...).inc()": best_ns('counter.labels("llama").inc()', namespace),
        "histogram observe()": best_ns("hchild.observe(0.02)", namespace),
        "loop of observe() per observation":
            best_ns("for v in values: hchild.observe(v)", namespace, number=N // 1000) / 1000,
        "observe_many(1000 values) per observation":
            best_ns("hchild.observe_many(values)", namespace, number=N // 1000) / 1000,
        "observe(v, weight=16) per observation": best_ns("hchild.observe(0.02, 16)", namespace) / 16,
    }
    tsm.close()
    return figures


def child_main(mode):
    if mode == "prometheus_client":
        print(json.dumps(prometheus_client_figures()))
    elif mode == "ours":
        print(json.dumps(ours(None)))
    else:  # "ours+jsonl:<config>:<plugin dir>"
        _, config, plugin_dir = mode.split(":", 2)
        print(json.dumps(ours(("jsonl", config, plugin_dir))))


def run_child(mode, env=None):
    result = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True,
                            text=True, env=env, check=True)
    return json.loads(result.stdout)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        child_main(sys.argv[2])
        return
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    with tempfile.TemporaryDirectory() as multiproc:
        env = dict(clean, PROMETHEUS_MULTIPROC_DIR=multiproc)
        columns = {
            "prometheus_client": run_child("prometheus_client", clean),
            "prometheus_client multiprocess": run_child("prometheus_client", env),
            "tokenspeed_metrics": run_child("ours", clean),
        }
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    plugin_dir = os.environ.get("TSM_JSONL_PLUGIN_DIR", os.path.join(root, "build", "plugins", "jsonl"))
    if os.path.exists(os.path.join(plugin_dir, "jsonl.so")):
        events = tempfile.mkdtemp(prefix="tsm-bench-")
        config = os.path.join(events, "m.json")
        with open(config, "w") as out:
            json.dump({"jsonl": {"path": os.path.join(events, "events-{pid}.jsonl")}}, out)
        columns["tokenspeed_metrics + jsonl"] = run_child(f"ours+jsonl:{config}:{plugin_dir}", clean)
        subprocess.run(["rm", "-rf", events], check=False)
    rows = list(dict.fromkeys(list(columns["tokenspeed_metrics"])
                              + list(columns["prometheus_client"])))
    names = list(columns)
    print("| ns per call | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for row in rows:
        cells = [f"{columns[name][row]:.1f}" if row in columns[name] else "-" for name in names]
        print(f"| {row} | " + " | ".join(cells) + " |")
    base, mp, us = (columns["prometheus_client"], columns["prometheus_client multiprocess"],
                    columns["tokenspeed_metrics"])
    print()
    print(f"cached child inc(): {base['cached child inc()'] / us['cached child inc()']:.1f}x "
          f"prometheus_client, {mp['cached child inc()'] / us['cached child inc()']:.1f}x its "
          f"multiprocess mode (goals 4x, 10x)")
    print(f"labels(...).inc(): {base['labels(...).inc()'] / us['labels(...).inc()']:.1f}x "
          f"prometheus_client (goal 4x)")
    compat = us["prometheus_client module: cached child inc()"]
    print(f"tokenspeed_metrics.prometheus_client cached child inc(): "
          f"{base['cached child inc()'] / compat:.1f}x prometheus_client, "
          f"{mp['cached child inc()'] / compat:.1f}x its multiprocess mode (goal 10x); "
          f"labels(model=...).inc(): "
          f"{mp['labels(model=...).inc()'] / us['prometheus_client module: labels(model=...).inc()']:.1f}x "
          f"its multiprocess mode")
    loop = us["loop of observe() per observation"]
    print(f"bulk: observe_many {loop / us['observe_many(1000 values) per observation']:.1f}x, "
          f"observe(v, weight=16) {loop / us['observe(v, weight=16) per observation']:.1f}x "
          f"a loop of observe() per observation (goal 10x)")


if __name__ == "__main__":
    main()
