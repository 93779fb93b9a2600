"""text_format_program.py — one launcher and two spawned producers recording
the same calls, on the client TEXT_FORMAT_CLIENT names (prometheus_client:
its multiprocess mode; tokenspeed_metrics: tokenspeed_metrics.prometheus_client
with start()); run by test_prometheus_client_text.py, which compares the
texts byte for byte.

Every process records the same series in the same order (the order the
host sorts them in: the order prometheus_client's multiprocess collector
then gives too), with the same amounts (float sums do not depend on the
order in which processes are added), and the gauges values that any order
of addition sums exactly. Printed on stdout as JSON: the launcher's
generate_latest of a registry with a MultiProcessCollector and a custom
collector, each producer's generate_latest(REGISTRY) (that process's own
families and a custom collector), and {pid: role}.

argv: WORKDIR."""
import json
import multiprocessing
import os
import sys

CLIENT = os.environ.get("TEXT_FORMAT_CLIENT", "prometheus_client")
OURS = CLIENT == "tokenspeed_metrics"
# prometheus_client 0.16 writes _created samples outside its multiprocess
# collector unless told not to (0.17's disable_created_metrics()); the host
# keeps none (docs/python.md). Read at its import; spawned producers inherit it.
os.environ["PROMETHEUS_DISABLE_CREATED_SERIES"] = "True"
RELEASE_TIMEOUT_S = 600  # hang guard only

# prometheus_client 0.16's gauge modes (mostrecent came later).
GAUGE_MODES = ("all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum")
GAUGE_VALUES = {"launcher": 1.5, "producer-1": -2.25, "producer-2": 1e6}
ESCAPED = 'm-q"\\\nx'  # a label value with a quote, a backslash and a newline


def client():
    if OURS:
        from tokenspeed_metrics import prometheus_client as pc
        from tokenspeed_metrics.prometheus_client import core, multiprocess  # noqa: F401
    else:
        import prometheus_client as pc
        from prometheus_client import core, multiprocess  # noqa: F401
        # Not offered by tokenspeed_metrics.prometheus_client (docs/python.md).
        for collector in (pc.PROCESS_COLLECTOR, pc.PLATFORM_COLLECTOR, pc.GC_COLLECTOR):
            if collector in pc.REGISTRY._collector_to_names:
                pc.REGISTRY.unregister(collector)
    return pc, core


def custom_collector(core, role):
    """A custom collector as engines write them: families of
    prometheus_client.core, registered with registry.register()."""

    class Collector:
        def describe(self):
            return [core.GaugeMetricFamily("custom:queue", "Queue.")]

        def collect(self):
            queue = core.GaugeMetricFamily("custom:queue", "Queue \\ depth\nof %s." % role,
                                           labels=["zeta", "alpha"])
            queue.add_metric(["z", "a"], 3)
            queue.add_metric(["a", ESCAPED], 1e6)
            queue.add_metric(["ü", "é"], -0.0)
            queue.add_metric(["t", "s"], 1, timestamp=1700000000.1234)
            yield queue
            routed = core.CounterMetricFamily("custom:routed_total", "Routed.", labels=["producer"])
            routed.add_metric(["0"], 7, created=1700000000.5)
            routed.add_metric(["1"], 12345678.9)
            yield routed
            yield core.CounterMetricFamily("custom:plain", "Plain.", value=2)
            yield core.HistogramMetricFamily(
                "custom:latency_seconds", "Latency.",
                buckets=[("0.0", 1), ("0.5", 2), ("+Inf", 3)], sum_value=1.25)
            sparse = core.HistogramMetricFamily("custom:sparse", "No sum.", labels=["b"])
            sparse.add_metric(["x"], [("1", 1), ("+Inf", 2)], None)
            yield sparse
            yield core.SummaryMetricFamily("custom:forward_seconds", "Forward.", count_value=4,
                                           sum_value=0.1 + 0.2)
            yield core.InfoMetricFamily("custom:build", "Build.",
                                        value={"version": "1.0", "commit": "abc"})
            yield core.StateSetMetricFamily("custom:state", "State.",
                                            value={"b": True, "a": False})
            yield core.GaugeHistogramMetricFamily("custom:queued", "Queued.",
                                                  buckets=[("1.0", 4), ("+Inf", 5)],
                                                  gsum_value=3)
            yield core.UnknownMetricFamily("custom:unknown", "Unknown.", value=1.5)
            yield core.GaugeMetricFamily("custom:temperature", "T.", value=21.5, unit="celsius")

    return Collector()


def record(pc, role):
    """The families every process defines and records, in the same order."""
    requests = pc.Counter("app:requests", "Requests \\ served.\nSecond line.",
                          ["zeta", "alpha"])  # definition order is not sorted
    for values, amount in ((("a", "z"), 1), (("b", "a"), 0.5), ((ESCAPED, "b"), 1e-7),
                           (("z", "ü"), 12345678.9)):
        requests.labels(*values).inc(amount)
    plain = pc.Counter("app:plain_total", "No labels.")
    plain.inc(3)
    for mode in GAUGE_MODES:
        gauge = pc.Gauge("app:gauge_" + mode, "Mode %s." % mode, ["b", "a"],
                         multiprocess_mode=mode)
        gauge.labels("1", "2").set(GAUGE_VALUES[role])
        gauge.labels("2", "1").set(1e-7)
    latency = pc.Histogram("app:latency_seconds", "Latency.", ["model"],
                           buckets=[0, 0.5, 1, 1e6])
    for model in ("a", "b"):
        for value in (0, 0.25, 2e7):
            latency.labels(model).observe(value)
    step = pc.Histogram("app:step_seconds", "Step.")  # default buckets, no labels
    step.observe(0.3)
    forward = pc.Summary("app:forward_seconds", "Forward.", ["model"])
    forward.labels("a").observe(0.1)
    forward.labels("b").observe(2.5)


def producer(role, queue, release):
    pc, core = client()
    record(pc, role)
    if role == "producer-1":  # shown by prometheus_client's REGISTRY outside its multiprocess collector
        pc.Info("app:build", "Build.").info({"version": "1.0", "commit": "abc"})
        pc.Enum("app_phase", "Phase.", ["engine"], states=["idle", "busy"]).labels("0").state("busy")
    pc.REGISTRY.register(custom_collector(core, role))
    queue.put((role, os.getpid(), pc.generate_latest(pc.REGISTRY).decode()))
    if not release.wait(RELEASE_TIMEOUT_S):
        raise SystemExit("never released")


def main():
    workdir = sys.argv[1]
    if OURS:
        import tokenspeed_metrics
        tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                                  "--metrics-multiproc-dir", workdir])
    else:
        directory = os.path.join(workdir, "prometheus-multiproc")
        os.makedirs(directory, exist_ok=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = directory
    pc, core = client()
    record(pc, "launcher")
    context = multiprocessing.get_context("spawn")
    queue, release = context.Queue(), context.Event()
    processes = [context.Process(target=producer, args=(role, queue, release), name=role,
                                 daemon=True)  # a failing launcher does not wait for them
                 for role in ("producer-1", "producer-2")]
    for process in processes:
        process.start()
    producers, roles = {}, {}
    for _ in processes:
        role, pid, text = queue.get(timeout=RELEASE_TIMEOUT_S)
        producers[role], roles[str(pid)] = text, role
    roles[str(os.getpid())] = "launcher"
    registry = pc.CollectorRegistry()
    pc.multiprocess.MultiProcessCollector(registry)
    registry.register(custom_collector(core, "launcher"))
    text = pc.generate_latest(registry).decode()
    release.set()
    for process in processes:
        process.join(RELEASE_TIMEOUT_S)
    json.dump({"multiprocess": text, "producers": producers, "roles": roles}, sys.stdout)


if __name__ == "__main__":
    main()
