"""A real Prometheus 2.42 scrapes the /metrics of prom-workload whose two
producer processes recorded through views (--metrics-views): a TTFT
histogram the engine defines with coarse buckets is rebucketed under 100 ms,
so histogram_quantile answers within them; a renamed counter is queried by
its new name only; a per-request label dropped leaves one series per model,
summed across requests and processes; a family capped at 3 series per process
keeps the first two label sets of each process and adds the rest up in the
series otel_metric_overflow="true", counted."""
import json
import os
import sys
import tempfile

from prom_common import (compare_values, eventually, instant_values, query, scraped_workload,
                         skip, verdict)

REQUEST = "model_name,app_key,request_id"

SCRIPT = f"""
metric tokenspeed:time_to_first_token_seconds histogram livemax model_name,app_key 0.3,1,5 Time to first token.
metric tokenspeed:generation_tokens counter livemax model_name,app_key - Generation tokens produced.
metric tokenspeed:prompt_tokens counter livemax {REQUEST} - Prefill tokens processed.
op 0 observe tokenspeed:time_to_first_token_seconds llama,default 0.03 4
op 1 observe tokenspeed:time_to_first_token_seconds llama,default 0.06 4
op 1 observe tokenspeed:time_to_first_token_seconds llama,default 0.09 2
op 0 inc tokenspeed:generation_tokens llama,default 100
op 1 inc tokenspeed:generation_tokens llama,default 20
op 0 inc tokenspeed:prompt_tokens llama,default,r1 10
op 0 inc tokenspeed:prompt_tokens llama,default,r2 20
op 1 inc tokenspeed:prompt_tokens llama,default,r3 30
metric tokenspeed:lora_requests counter livemax model_name,lora_name - Requests per adapter.
op 0 inc tokenspeed:lora_requests llama,l1 1
op 0 inc tokenspeed:lora_requests llama,l2 2
op 0 inc tokenspeed:lora_requests llama,l3 4
op 0 inc tokenspeed:lora_requests llama,l4 8
op 1 inc tokenspeed:lora_requests llama,l1 16
op 1 inc tokenspeed:lora_requests llama,l5 32
op 1 inc tokenspeed:lora_requests llama,l6 64
"""

VIEWS = {"views": [
    {"select": {"name": "tokenspeed:time_to_first_token_seconds", "kind": "histogram"},
     "buckets": [0.025, 0.05, 0.075, 0.1, 0.2]},
    {"select": {"name": "tokenspeed:generation_tokens"}, "name": "llm_generation_tokens"},
    {"select": {"name": "tokenspeed:prompt_tokens"}, "drop_labels": ["request_id"]},
    {"select": {"name": "tokenspeed:lora_requests"}, "cardinality_limit": 3},
]}

# 4 observations in (0.025, 0.05], 4 in (0.05, 0.075], 2 in (0.075, 0.1]: the
# median is the first of the second bucket's four, interpolated: 0.05 + 0.025 / 4.
EXPECTED = {
    'histogram_quantile(0.5, tokenspeed:time_to_first_token_seconds_bucket)': 0.05625,
    'tokenspeed:time_to_first_token_seconds_bucket{le="0.075"}': 8,
    'llm_generation_tokens_total{model_name="llama",app_key="default"}': 120,
    'count(llm_generation_tokens_total)': 1,
    'count(tokenspeed:prompt_tokens_total)': 1,
    'tokenspeed:prompt_tokens_total{model_name="llama",app_key="default"}': 60,
    # Process 0 keeps l1 and l2, process 1 l1 and l5; l3, l4 and l6 overflow.
    'tokenspeed:lora_requests_total{otel_metric_overflow="true"}': 76,
    'tokenspeed:lora_requests_total{lora_name="l1"}': 17,
    'count(tokenspeed:lora_requests_total)': 4,
    'sum(tokenspeed:lora_requests_total)': 127,
    'sum(tokenspeed_metrics_series_overflowed_total)': 3,
}
ABSENT = ['tokenspeed:generation_tokens_total', 'tokenspeed:prompt_tokens_total{request_id!=""}',
          'tokenspeed:time_to_first_token_seconds_bucket{le="0.3"}',
          'tokenspeed:lora_requests_total{lora_name=~"l3|l4|l6"}']


def main():
    program = sys.argv[1]
    prometheus = sys.argv[2] if len(sys.argv) > 2 else ""
    if not prometheus or not os.path.exists(prometheus):
        skip("prometheus (Debian package prometheus) is not installed")

    views_dir = tempfile.TemporaryDirectory(prefix="tsm-prometheus-views-")
    views = os.path.join(views_dir.name, "views.json")
    with open(views, "w", encoding="utf-8") as file:
        json.dump(VIEWS, file)
    os.environ["TSM_WORKLOAD_VIEWS"] = views
    failures = []
    with views_dir, scraped_workload(prometheus, program, SCRIPT) as (_, server, ended):
        values = {}

        def scraped():
            values.clear()
            values.update(instant_values(server.base, EXPECTED))
            return len(values) == len(EXPECTED)

        eventually(scraped, interval=0.5)
        compare_values(values, EXPECTED, failures)
        for expr in ABSENT:
            result = query(server.base, expr)
            print(f"{'FAIL' if result else 'ok  '} {expr} absent")
            if result:
                failures.append(expr)
    return verdict(failures, ended)


if __name__ == "__main__":
    sys.exit(main())
