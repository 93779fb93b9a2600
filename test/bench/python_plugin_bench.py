"""Events per second into a Python sink whose emit does nothing, through
python.so (docs/performance.md). Installs the bench_noop_sink package into a
fresh virtual environment (pip, offline), then runs a one-process Python
engine that records N counter increments with two labels and closes, which
drains every event through the bridge:

    /usr/bin/python3 test/bench/python_plugin_bench.py build

Prints the best of 3 runs: the time to record, the time until close returned
(every event delivered), and events/s delivered over that whole time."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SOURCE_ROOT, "test", "python_plugins"))
from plugin_venv import make_venv, venv_environment  # noqa: E402

N = 1_000_000
RUNS = 3
ENGINE = """
import json, sys, time
import tokenspeed_metrics
n, plugin_dir, reporter = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tokenspeed_metrics.start(["--enable-metrics", "--metrics-reporters", reporter,
                          "--metrics-plugin-dir", plugin_dir,
                          "--metrics-reporter-queue-size", str(2 * n)])
requests = tokenspeed_metrics.Counter("bench:requests", "Requests.", ["model", "route"])
child = requests.labels("llama", "/chat")
child.inc()  # the sink exists before the clock starts
report = None
start = time.perf_counter()
for _ in range(n):
    child.inc()
recorded = time.perf_counter()
report = tokenspeed_metrics.close(60)
closed = time.perf_counter()
output = [o for o in report["outputs"] if o["output"] == reporter][0]
print(json.dumps({"record_s": recorded - start, "total_s": closed - start,
                  "delivered": output["delivered"], "dropped": output.get("dropped_queue_full", 0)}))
"""


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
    root = tempfile.mkdtemp(prefix="tsm-bench-")
    venv = make_venv(root, "bench", ["bench_noop_sink"])
    program = os.path.join(root, "engine.py")
    with open(program, "w") as file:
        file.write(ENGINE)
    env = venv_environment(venv, {
        "PYTHONPATH": os.path.join(SOURCE_ROOT, "host", "python") + ":" +
                      os.path.join(build, "host", "python")})
    results = {}
    for reporter, plugin_dir in (("noop_output", os.path.join(build, "plugins", "python")),):
        runs = []
        for _ in range(RUNS):
            out = subprocess.run([os.path.join(venv, "bin", "python"), program, str(N), plugin_dir,
                                  reporter], capture_output=True, text=True, env=env, check=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        best = min(runs, key=lambda run: run["total_s"])
        results[reporter] = best
        print(f"{reporter}: {N} events recorded in {best['record_s'] * 1e3:.0f} ms, "
              f"all delivered after {best['total_s'] * 1e3:.0f} ms "
              f"(delivered {best['delivered']}): {best['delivered'] / best['total_s']:,.0f} events/s "
              f"into the Python sink")
    subprocess.run(["rm", "-rf", root], check=False)


if __name__ == "__main__":
    main()
