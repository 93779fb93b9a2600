"""A program written for prometheus_client's multiprocess mode, and its port.

Run with --client prometheus_client or --client tokenspeed_metrics; the port
changes the import and the start-up call only (docs/python.md). Four
multiprocessing producers (spawn start method) record deterministic values;
the parent prints the exposition of all of them to stdout."""
import argparse
import multiprocessing
import os
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--client", required=True)
parser.add_argument("--dir", required=True)
args, _ = parser.parse_known_args()

if args.client == "prometheus_client":
    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", args.dir)
    from prometheus_client import Counter, Gauge, Histogram  # the original import
else:
    from tokenspeed_metrics import Counter, Gauge, Histogram  # the port's import

REQUESTS = Counter("app:requests", "Requests served.", ["route", "status"])
TOKENS = Counter("app:tokens_total", "Tokens generated.")
LATENCY = Histogram("app:latency_seconds", "Request latency.", ["route"],
                    buckets=(0.01, 0.1, 1.0, 10.0))
IN_FLIGHT = Gauge("app:in_flight", "Requests in flight.", multiprocess_mode="sum")
PEAK = Gauge("app:peak_batch", "Largest batch seen.", multiprocess_mode="max")


def work(index):
    for i in range(200 + index):
        route = "/chat" if i % 3 else "/complete"
        REQUESTS.labels(route, "200" if i % 10 else "500").inc()
        TOKENS.inc(index + 1)
        LATENCY.labels(route=route).observe(0.005 * (i % 50))
    IN_FLIGHT.inc(index)
    PEAK.set(10 * index + 3)


def main():
    if args.client == "tokenspeed_metrics":
        import tokenspeed_metrics
        tokenspeed_metrics.start(["--enable-metrics", "--metrics-port", "0",
                                  "--metrics-multiproc-dir", args.dir])
    context = multiprocessing.get_context("spawn")
    producers = [context.Process(target=work, args=(index,)) for index in range(4)]
    for producer in producers:
        producer.start()
    for producer in producers:
        producer.join()
        assert producer.exitcode == 0, producer.exitcode
    if args.client == "prometheus_client":
        from prometheus_client import CollectorRegistry, generate_latest, multiprocess
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        sys.stdout.write(generate_latest(registry).decode())
    else:
        import tokenspeed_metrics
        sys.stdout.write(tokenspeed_metrics.generate_latest().decode())


if __name__ == "__main__":
    main()
