"""engine.py — a Python engine as pip installed us, run by a fresh virtual
environment's interpreter (test_package.py): start() with prometheus, jsonl
and the specification's example package (through the packaged python
bridge), two spawned multiprocessing producers recording, a scrape on stdout,
the summary table on stderr. Asserts that every file of ours it maps, in the
launcher and in the producers, is the package's in this environment."""
import multiprocessing
import os
import sys
import sysconfig
import urllib.request

import tokenspeed_metrics
import _tokenspeed_metrics
from tokenspeed_metrics import prometheus_client as compat

SITE = os.path.realpath(sysconfig.get_paths()["platlib"])


def inside_site(path):
    return os.path.realpath(path).startswith(SITE + os.sep)


def check_mapped_files(where):
    """Every mapped file of ours is in this environment's site-packages; a
    mapped libpython is this interpreter's own."""
    ours = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split(None, 5)
            path = fields[5].strip() if len(fields) == 6 else ""
            name = os.path.basename(path)
            if not path.startswith("/"):
                continue  # memfds (the handoff, metric files) and anonymous mappings
            if name.startswith("libpython3") and sysconfig.get_config_var("Py_ENABLE_SHARED"):
                libdir = os.path.realpath(sysconfig.get_config_var("LIBDIR"))
                assert os.path.dirname(os.path.realpath(path)) == libdir, (where, path, libdir)
            elif name.endswith(".so") and ("tokenspeed" in name or name in ("jsonl.so", "python.so")):
                ours.add(path)
    outside = sorted(path for path in ours if not inside_site(path))
    assert not outside, (where, outside)
    return ours


def work(index):
    requests = tokenspeed_metrics.Counter("pkg:requests", "Requests.", ["producer"])
    latency = tokenspeed_metrics.Histogram("pkg:latency_seconds", "Latency.", ["producer"],
                                           buckets=(0.01, 0.1, 1.0))
    # The prometheus_client module of the package, as an engine imports it.
    spread = compat.Summary("pkg:spread_seconds", "Spread.", ["producer"])
    for _ in range(250):
        requests.labels(str(index)).inc(index + 1)
        latency.labels(str(index)).observe(0.02, weight=2)
        spread.labels(str(index)).observe(0.5)
    assert "_tokenspeed_metrics_bridge" in sys.modules, "no bridge in the producer's interpreter"
    mapped = check_mapped_files("producer %d" % index)
    assert any(path.endswith("/plugins/jsonl.so") for path in mapped), mapped


def main():
    config, run_dir = sys.argv[1:3]
    for module in (tokenspeed_metrics, _tokenspeed_metrics, compat):
        assert inside_site(module.__file__), (module.__file__, SITE)
    tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                              "--metrics-reporters", "prometheus,jsonl,example_output",
                              "--metrics-reporter-config", config,
                              "--metrics-multiproc-dir", run_dir,
                              "--metrics-shutdown-timeout", "2"])
    bridge = sys.modules.get("_tokenspeed_metrics_bridge")
    assert bridge is not None, "no bridge in the engine's interpreter"
    assert inside_site(bridge.__file__), bridge.__file__
    mapped = check_mapped_files("launcher")
    for name in ("libtokenspeed-metrics.so", "python.so", "jsonl.so"):
        assert any(os.path.basename(path) == name for path in mapped), (name, mapped)
    context = multiprocessing.get_context("spawn")
    producers = [context.Process(target=work, args=(i,)) for i in range(2)]
    for producer in producers:
        producer.start()
    for producer in producers:
        producer.join()
        assert producer.exitcode == 0, producer.exitcode
    with urllib.request.urlopen(tokenspeed_metrics.metrics_url(), timeout=30) as response:
        sys.stdout.write(response.read().decode())
    report = tokenspeed_metrics.close()
    sys.stderr.write(report["table"])


if __name__ == "__main__":
    main()
