"""An engine written to SGLang's metrics call patterns (our own code):
scheduler processes whose collector takes labelnames=labels.keys() (a
dict_keys), mostrecent gauges and gauges of the default mode (all: one
series per process, with a pid label), counters named with _total,
histograms whose first bucket is 0.0, a per-stage histogram whose labels are
the dict's keys plus "stage", a Summary, a family whose labelnames are a
set; a tokenizer process with request counters, the batched
inter-token-latency idiom and the time-to-first-token straggler check, which
reads this process's bucket counts back (sum of _buckets[i]._value). The
launcher exposes every process with CollectorRegistry + MultiProcessCollector
+ generate_latest and CONTENT_TYPE_LATEST. The import lines are the only
difference between runs."""
import sys

from harness import OURS, Producers, idiom_expectation, now, report, start_launcher

MODEL = "tiny-qwen"


def exponential_buckets(start, width, length):
    return [start * width ** i for i in range(length)]


class SchedulerMetricsCollector:
    def __init__(self, labels):
        if OURS:
            from tokenspeed_metrics.prometheus_client import Counter, Gauge, Histogram, Summary
        else:
            from reference_client import Counter, Gauge, Histogram, Summary
        self.labels = labels
        self.num_running_reqs = Gauge(name="sglang:num_running_reqs",
                                      documentation="Running requests.",
                                      labelnames=labels.keys(), multiprocess_mode="mostrecent")
        self.token_usage = Gauge(name="sglang:token_usage", documentation="Token usage.",
                                 labelnames=labels.keys(), multiprocess_mode="mostrecent")
        self.num_retracted_reqs = Gauge(name="sglang:num_retracted_reqs",
                                        documentation="Retracted requests.",
                                        labelnames=labels.keys())
        self.num_bootstrap_failed_reqs = Counter(name="sglang:num_bootstrap_failed_reqs_total",
                                                 documentation="Bootstrap failures.",
                                                 labelnames=labels.keys())
        self.queue_time = Histogram(name="sglang:queue_time_seconds",
                                    documentation="Queueing time.", labelnames=labels.keys(),
                                    buckets=[0.0, 0.1, 0.2, 0.5, 1, 2, 5, 10])
        self.per_stage_req_latency_seconds = Histogram(
            name="sglang:per_stage_req_latency_seconds", documentation="Per-stage latency.",
            buckets=exponential_buckets(start=0.001, width=1.62, length=30),
            labelnames=list(labels.keys()) + ["stage"])
        self.forward_time = Summary(name="sglang:forward_time_seconds",
                                    documentation="Forward pass time.", labelnames=labels.keys())
        self.kv_events = Counter(name="sglang:kv_events", documentation="KV cache events.",
                                 labelnames={"event", "tp_rank"})

    def _log_gauge(self, gauge, data):
        gauge.labels(**self.labels).set(data)

    def log_stats(self, step):
        self._log_gauge(self.num_running_reqs, (step * 5) % 23)
        self._log_gauge(self.token_usage, ((step * 7) % 100) / 100)
        self._log_gauge(self.num_retracted_reqs, step % 3)

    def observe(self, step):
        self.queue_time.labels(**self.labels).observe(0.01 * (step % 300))
        self.per_stage_req_latency_seconds.labels(**{**self.labels, "stage": "prefill"}).observe(
            0.002 * (step % 50))
        self.forward_time.labels(**self.labels).observe(0.001 * (step % 17))
        self.kv_events.labels(event="stored" if step % 2 else "removed",
                              tp_rank=self.labels["tp_rank"]).inc()
        if step % 97 == 0:
            self.num_bootstrap_failed_reqs.labels(**self.labels).inc(1)


class TokenizerMetricsCollector:
    def __init__(self, labels):
        if OURS:
            from tokenspeed_metrics.prometheus_client import Counter, Histogram
        else:
            from reference_client import Counter, Histogram
        self.labels = labels
        self.prompt_tokens_total = Counter(name="sglang:prompt_tokens_total",
                                           documentation="Prompt tokens.",
                                           labelnames=labels.keys())
        self.num_requests_total = Counter(name="sglang:num_requests_total",
                                          documentation="Requests.", labelnames=labels.keys())
        self.histogram_time_to_first_token = Histogram(
            name="sglang:time_to_first_token_seconds", documentation="TTFT.",
            labelnames=labels.keys(), buckets=[0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6])
        self.histogram_inter_token_latency = Histogram(
            name="sglang:inter_token_latency_seconds", documentation="ITL.",
            labelnames=labels.keys(),
            buckets=[0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.040, 0.100, 1.000])

    def observe_one_finished_request(self, labels, prompt_tokens):
        self.prompt_tokens_total.labels(**labels).inc(prompt_tokens)
        self.num_requests_total.labels(**labels).inc(1)

    def observe_time_to_first_token(self, labels, value):
        self.histogram_time_to_first_token.labels(**labels).observe(value)

    def check_time_to_first_token_straggler(self, value):
        his = self.histogram_time_to_first_token.labels(**self.labels)
        total_observations = sum(bucket._value for bucket in his._buckets)
        if total_observations < 100:
            return False
        p99_threshold = total_observations * 0.99
        cumulative_count = 0
        for i, bucket in enumerate(his._buckets):
            cumulative_count += bucket._value
            if cumulative_count > p99_threshold:
                return value >= his._upper_bounds[i]
        return False

    def observe_inter_token_latency(self, labels, internval, num_new_tokens):
        adjusted_interval = internval / num_new_tokens
        his = self.histogram_inter_token_latency.labels(**labels)
        his._sum.inc(internval)
        for i, bound in enumerate(his._upper_bounds):
            if adjusted_interval <= bound:
                his._buckets[i].inc(num_new_tokens)
                break


def scheduler(tp_rank):
    collector = SchedulerMetricsCollector(
        {"model_name": MODEL, "engine_type": "unified", "tp_rank": str(tp_rank)})
    for step in range(250):
        collector.log_stats(step + tp_rank)
        collector.observe(step)


def decode_batches():
    return [(0.003 * (1 + i % 11) * (1 + i % 5), 1 + i % 5) for i in range(300)]


def tokenizer():
    if OURS:
        from tokenspeed_metrics.prometheus_client import Counter
    else:
        from reference_client import Counter
    # Not SGLang's: the straggler check's verdicts, for the comparison.
    verdicts = Counter("engine_patterns:straggler_verdicts", "Straggler check verdicts.",
                       ["straggler"])
    labels = {"model_name": MODEL}
    collector = TokenizerMetricsCollector(labels)
    for request in range(150):
        collector.observe_one_finished_request(labels, 64 + request)
        ttft = 0.05 * (request % 40) + (3.0 if request % 50 == 49 else 0.0)
        straggler = collector.check_time_to_first_token_straggler(ttft)
        collector.observe_time_to_first_token(labels, ttft)
        verdicts.labels(straggler=str(straggler)).inc()
    for interval, tokens in decode_batches():
        collector.observe_inter_token_latency(labels, interval, tokens)


def main(workdir):
    window_start = now()
    start_launcher(workdir)
    producers = Producers([("scheduler-0", scheduler, (0,)), ("scheduler-1", scheduler, (1,)),
                           ("tokenizer", tokenizer, ())])
    if OURS:
        from tokenspeed_metrics.prometheus_client import (
            CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess)
    else:
        from reference_client import (
            CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    text = generate_latest(registry).decode()
    producers.finish()
    batches = decode_batches()
    report(text, producers.roles, [window_start, now()], content_type=CONTENT_TYPE_LATEST,
           idiom=idiom_expectation("sglang:inter_token_latency_seconds", batches))


if __name__ == "__main__":
    main(sys.argv[1])
