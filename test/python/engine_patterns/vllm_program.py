"""An engine written to vLLM's metrics call patterns (our own code): API
server processes (spawned) each build a stat logger over engine indexes:
families first cleared from REGISTRY through its _collector_to_names, then
made with keyword arguments (mostrecent gauges, counters, histograms with
integer 1-2-5 buckets), children per engine kept in dicts (positional
labels), a config-info gauge whose labelnames are a dict's keys, a LoRA
gauge set with set_to_current_time() and an integer label value. The
launcher records too and reads REGISTRY.collect() back as vLLM's snapshot
reader does, serves /metrics from CollectorRegistry + MultiProcessCollector
+ make_asgi_app, scrapes it, and calls mark_process_dead(pid) for each
producer that ended; a third API server, recording nothing, renders the
same exposition in its own process. The import lines are the only difference between runs."""
import os
import sys

from harness import OURS, Producers, now, report, scrape, serve_asgi, start_launcher

MODEL = "tiny-llama"
FINISH_REASONS = ("stop", "length", "abort")


def unregister_engine_metrics():
    if OURS:
        from tokenspeed_metrics.prometheus_client import REGISTRY
    else:
        from reference_client import REGISTRY
    for collector in list(REGISTRY._collector_to_names):
        if hasattr(collector, "_name") and "vllm" in collector._name:
            REGISTRY.unregister(collector)


def build_1_2_5_buckets(max_value):
    buckets, exponent = [], 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10 ** exponent
            if value > max_value:
                return buckets
            buckets.append(value)
        exponent += 1


class StatLogger:
    def __init__(self, engine_indexes):
        if OURS:
            import tokenspeed_metrics.prometheus_client as prometheus_client
        else:
            import reference_client as prometheus_client
        self.engine_indexes = engine_indexes
        unregister_engine_metrics()
        labelnames = ["model_name", "engine"]

        def per_engine(metric):
            return {idx: metric.labels(MODEL, str(idx)) for idx in engine_indexes}

        self.gauge_running = per_engine(prometheus_client.Gauge(
            name="vllm:num_requests_running", documentation="Running.",
            multiprocess_mode="mostrecent", labelnames=labelnames))
        self.gauge_waiting = per_engine(prometheus_client.Gauge(
            name="vllm:num_requests_waiting", documentation="Waiting.",
            multiprocess_mode="mostrecent", labelnames=labelnames))
        self.gauge_kv_usage = per_engine(prometheus_client.Gauge(
            name="vllm:kv_cache_usage_perc", documentation="KV usage.", labelnames=labelnames))
        self.counter_prompt_tokens = per_engine(prometheus_client.Counter(
            name="vllm:prompt_tokens", documentation="Prefill tokens.", labelnames=labelnames))
        self.counter_generation_tokens = per_engine(prometheus_client.Counter(
            name="vllm:generation_tokens", documentation="Generated tokens.",
            labelnames=labelnames))
        success = prometheus_client.Counter(
            name="vllm:request_success", documentation="Finished requests.",
            labelnames=labelnames + ["finished_reason"])
        self.counter_request_success = {
            reason: {idx: success.labels(MODEL, str(idx), str(reason)) for idx in engine_indexes}
            for reason in FINISH_REASONS}
        self.histogram_prompt_tokens = per_engine(prometheus_client.Histogram(
            name="vllm:request_prompt_tokens", documentation="Prompt tokens per request.",
            buckets=build_1_2_5_buckets(2048), labelnames=labelnames))
        self.histogram_ttft = per_engine(prometheus_client.Histogram(
            name="vllm:time_to_first_token_seconds", documentation="TTFT.",
            buckets=[0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 1.0],
            labelnames=labelnames))
        self.gauge_lora_info = prometheus_client.Gauge(
            name="vllm:lora_requests_info", documentation="Running stats on lora requests.",
            multiprocess_mode="sum",
            labelnames=["max_lora", "waiting_lora_adapters", "running_lora_adapters"])

    def log_cache_config_info(self, metrics_info):
        if OURS:
            import tokenspeed_metrics.prometheus_client as prometheus_client
        else:
            import reference_client as prometheus_client
        metrics_info = dict(metrics_info, engine="")
        info_gauge = prometheus_client.Gauge(
            name="vllm:cache_config_info", documentation="Cache config.",
            multiprocess_mode="mostrecent", labelnames=metrics_info.keys())
        for engine_index in self.engine_indexes:
            info_gauge.labels(**dict(metrics_info, engine=str(engine_index))).set(1)

    def record(self, step, engine_idx):
        self.gauge_running[engine_idx].set((step * 3 + engine_idx) % 17)
        self.gauge_waiting[engine_idx].set(step % 4)
        self.gauge_kv_usage[engine_idx].set((step % 10) / 10)
        self.counter_prompt_tokens[engine_idx].inc(step % 50)
        self.counter_generation_tokens[engine_idx].inc(1 + step % 3)
        reason = FINISH_REASONS[step % 3]
        self.counter_request_success[reason][engine_idx].inc()
        self.histogram_prompt_tokens[engine_idx].observe((step * 41) % 3000)
        self.histogram_ttft[engine_idx].observe(0.003 * (step % 200))
        self.gauge_lora_info.labels(**{"running_lora_adapters": "a,b",
                                       "waiting_lora_adapters": "",
                                       "max_lora": 4}).set_to_current_time()


def api_server(engine_indexes):
    logger = StatLogger(engine_indexes)
    logger.log_cache_config_info({"block_size": "16", "cache_dtype": "auto"})
    for step in range(200):
        for engine_idx in engine_indexes:
            logger.record(step, engine_idx)


def serve_from_child(path):
    """An API server that serves /metrics itself (vLLM with
    --api-server-count > 1): every process's families, read in this child."""
    if OURS:
        from tokenspeed_metrics.prometheus_client import (
            CollectorRegistry, generate_latest, multiprocess)
    else:
        from reference_client import CollectorRegistry, generate_latest, multiprocess
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    with open(path, "wb") as out:
        out.write(generate_latest(registry))


def get_metrics_snapshot():
    """vLLM's reader: REGISTRY.collect() as (type, name, labels, value) rows."""
    if OURS:
        from tokenspeed_metrics.prometheus_client import REGISTRY
    else:
        from reference_client import REGISTRY
    rows = []
    for metric in REGISTRY.collect():
        if not metric.name.startswith("vllm:launcher_"):
            continue
        for sample in metric.samples:
            if sample.name.endswith("_created"):
                continue
            rows.append([metric.type, metric.name, sample.name, sorted(sample.labels.items()),
                         sample.value])
    return sorted(rows)


def record_in_launcher():
    if OURS:
        import tokenspeed_metrics.prometheus_client as prometheus_client
    else:
        import reference_client as prometheus_client
    requests = prometheus_client.Counter("vllm:launcher_requests", "Requests.", ["route"])
    latency = prometheus_client.Histogram("vllm:launcher_latency_seconds", "Latency.",
                                          buckets=[0.1, 1.0])
    for i in range(10):
        requests.labels("/v1/completions").inc()
        latency.observe(0.05 * i)


def main(workdir):
    window_start = now()
    start_launcher(workdir)
    if OURS:
        from tokenspeed_metrics.prometheus_client import (
            CollectorRegistry, make_asgi_app, multiprocess)
    else:
        from reference_client import CollectorRegistry, make_asgi_app, multiprocess
    record_in_launcher()
    snapshot = get_metrics_snapshot()
    child_exposition = os.path.join(workdir, "child-exposition.txt")
    producers = Producers([("api-server-0", api_server, ([0, 1],)),
                           ("api-server-1", api_server, ([2],)),
                           ("api-server-2", serve_from_child, (child_exposition,))])
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    url = serve_asgi(make_asgi_app(registry=registry))
    _, text = scrape(url + "/metrics")
    for pid in producers.finish():
        multiprocess.mark_process_dead(pid)
    _, after_exit = scrape(url + "/metrics")
    with open(child_exposition) as child:
        from_child = child.read()
    report(text, producers.roles, [window_start, now()], after_exit=after_exit, snapshot=snapshot,
           from_child=from_child)


if __name__ == "__main__":
    main(sys.argv[1])
