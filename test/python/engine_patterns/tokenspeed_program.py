"""An engine written to TokenSpeed's metrics call patterns (our own code):
EngineMetrics per scheduler rank with labels from a dict (livemax gauges, an
iteration-token histogram, spec-decode counters, each recorded through
labels(**labels)), request metrics in the tokenizer process including the
batched inter-token-latency idiom (_sum.inc, then _buckets[i].inc), a
function timer with exponential buckets, and the launcher's /metrics:
CollectorRegistry + MultiProcessCollector + make_asgi_app, served and
scraped. Which prometheus_client it imports is the only thing that changes
between runs (harness.OURS)."""
import sys

from harness import (OURS, Producers, idiom_expectation, now, report, scrape, serve_asgi,
                     start_launcher)

MODEL = "tiny-llama"


def exponential_buckets(start, width, length):
    return [start * width ** i for i in range(length)]


class EngineMetrics:
    def __init__(self, labels, *, enabled, registry=None):
        self.enabled = enabled
        self.labels = labels
        if enabled:
            self._init_prometheus(labels, registry=registry)

    def _init_prometheus(self, labels, *, registry=None):
        if OURS:
            from tokenspeed_metrics.prometheus_client import Counter, Gauge, Histogram
        else:
            from reference_client import Counter, Gauge, Histogram
        labelnames = list(labels.keys())
        kw = {"registry": registry} if registry is not None else {}
        self.num_requests_running = Gauge(
            name="tokenspeed:num_requests_running", documentation="Running requests.",
            labelnames=labelnames, multiprocess_mode="livemax", **kw)
        self.num_requests_waiting = Gauge(
            name="tokenspeed:num_requests_waiting", documentation="Waiting requests.",
            labelnames=labelnames, multiprocess_mode="livemax", **kw)
        self.kv_cache_usage_ratio = Gauge(
            name="tokenspeed:kv_cache_usage_ratio", documentation="KV cache usage.",
            labelnames=labelnames, multiprocess_mode="livemax", **kw)
        self.iteration_tokens_total = Histogram(
            name="tokenspeed:iteration_tokens_total", documentation="Tokens per iteration.",
            labelnames=labelnames, buckets=[1, 8, 16, 32, 64, 128, 256, 512, 1024], **kw)
        self.spec_decode_num_drafts = Counter(
            name="tokenspeed:spec_decode_num_drafts", documentation="Drafts.",
            labelnames=labelnames, **kw)
        self.spec_decode_num_accepted_tokens = Counter(
            name="tokenspeed:spec_decode_num_accepted_tokens_total",
            documentation="Accepted draft tokens.", labelnames=labelnames, **kw)

    def log_stats(self, running, waiting, usage):
        self.num_requests_running.labels(**self.labels).set(running)
        self.num_requests_waiting.labels(**self.labels).set(waiting)
        self.kv_cache_usage_ratio.labels(**self.labels).set(usage)

    def observe_iteration(self, num_tokens, drafts, accepted):
        self.iteration_tokens_total.labels(**self.labels).observe(num_tokens)
        self.spec_decode_num_drafts.labels(**self.labels).inc(drafts)
        self.spec_decode_num_accepted_tokens.labels(**self.labels).inc(accepted)


class RequestMetrics:
    def __init__(self, labels):
        if OURS:
            from tokenspeed_metrics.prometheus_client import Counter, Histogram
        else:
            from reference_client import Counter, Histogram
        self.labels = labels
        labelnames = list(labels.keys())
        self.prompt_tokens_total = Counter(
            name="tokenspeed:prompt_tokens_total", documentation="Prompt tokens.",
            labelnames=labelnames)
        self.num_requests_total = Counter(
            name="tokenspeed:num_requests_total", documentation="Requests.",
            labelnames=labelnames)
        self.histogram_time_to_first_token = Histogram(
            name="tokenspeed:time_to_first_token_seconds", documentation="TTFT.",
            labelnames=labelnames, buckets=[0.01, 0.05, 0.1, 0.5, 1.0, 5.0])
        self.histogram_inter_token_latency_seconds = Histogram(
            name="tokenspeed:inter_token_latency_seconds", documentation="ITL.",
            labelnames=labelnames, buckets=[0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5])

    def observe_one_finished_request(self, prompt_tokens, ttft):
        self.prompt_tokens_total.labels(**self.labels).inc(prompt_tokens)
        self.num_requests_total.labels(**self.labels).inc(1)
        self.histogram_time_to_first_token.labels(**self.labels).observe(ttft)

    def observe_inter_token_latency(self, interval, num_new_tokens):
        adjusted_interval = interval / num_new_tokens
        his = self.histogram_inter_token_latency_seconds.labels(**self.labels)
        his._sum.inc(interval)
        for i, bound in enumerate(his._upper_bounds):
            if adjusted_interval <= bound:
                his._buckets[i].inc(num_new_tokens)
                break


# The function timer: a decorator observing each call's duration. The clock
# is the program's own, so both runs observe the same durations.
FUNC_LATENCY = None
_fake_clock = [0.0]


def enable_func_timer():
    global FUNC_LATENCY
    if OURS:
        from tokenspeed_metrics.prometheus_client import Histogram
    else:
        from reference_client import Histogram
    FUNC_LATENCY = Histogram("tokenspeed:func_latency_seconds", "Function latency in seconds",
                             buckets=exponential_buckets(start=0.05, width=1.5, length=18),
                             labelnames=["name"])


def time_func_latency(func):
    def wrapper(*args, **kwargs):
        start = _fake_clock[0]
        try:
            return func(*args, **kwargs)
        finally:
            FUNC_LATENCY.labels(name=func.__name__).observe(_fake_clock[0] - start)
    return wrapper


@time_func_latency
def schedule_batch(step):
    _fake_clock[0] += 0.03 * (step % 7 + 1)


def scheduler_producer(rank):
    enable_func_timer()
    metrics = EngineMetrics({"model_name": MODEL, "engine_type": "unified", "tp_rank": str(rank)},
                            enabled=True)
    for step in range(300):
        schedule_batch(step)
        metrics.log_stats(running=(step * 7 + rank) % 32, waiting=(step + rank) % 5,
                          usage=((step * 13) % 100) / 100)
        metrics.observe_iteration(num_tokens=(step * 37 + rank) % 900 + 1, drafts=rank + 1,
                                  accepted=step % 3)


# The idiom's batches: (interval, tokens) per decode step of one request.
def decode_batches():
    return [(0.004 * (1 + i % 9) * (1 + i % 4), 1 + i % 4) for i in range(400)]


def tokenizer_producer():
    metrics = RequestMetrics({"model_name": MODEL, "engine_type": "unified"})
    for request in range(50):
        metrics.observe_one_finished_request(prompt_tokens=100 + request, ttft=0.02 * (request % 30))
    for interval, tokens in decode_batches():
        metrics.observe_inter_token_latency(interval, tokens)


def add_prometheus_middleware():
    """The launcher's /metrics: an ASGI app over a multiprocess registry."""
    if OURS:
        from tokenspeed_metrics.prometheus_client import (
            CollectorRegistry, make_asgi_app, multiprocess)
    else:
        from reference_client import CollectorRegistry, make_asgi_app, multiprocess
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return serve_asgi(make_asgi_app(registry=registry))


def main(workdir):
    window_start = now()
    start_launcher(workdir)
    producers = Producers([("scheduler-0", scheduler_producer, (0,)),
                           ("scheduler-1", scheduler_producer, (1,)),
                           ("tokenizer", tokenizer_producer, ())])
    url = add_prometheus_middleware()
    content_type, text = scrape(url + "/metrics")
    producers.finish()
    batches = decode_batches()
    report(text, producers.roles, [window_start, now()], content_type=content_type,
           idiom=idiom_expectation("tokenspeed:inter_token_latency_seconds", batches))


if __name__ == "__main__":
    main(sys.argv[1])
