"""A real Prometheus 2.42 on loopback (its own config, data directory and
free port) scrapes the /metrics endpoint of prom-workload, which forked two
producer processes that recorded a scripted workload; the values are checked
through Prometheus's /api/v1/query API: counter totals, a gauge's last value,
a weighted histogram's count and sum, and a series written by both producer
processes summed."""
import os
import sys

from prom_common import (compare_values, eventually, instant_values, query, scraped_workload,
                         skip, verdict)

ENGINE = "model_name,app_key,dp_rank"
REQUEST = "model_name,app_key"

SCRIPT = f"""
metric tokenspeed:num_requests_running gauge livemax {ENGINE} - Number of requests currently running.
metric tokenspeed:prompt_tokens counter livemax {REQUEST} - Prefill tokens processed.
metric tokenspeed:generation_tokens counter livemax {REQUEST} - Generation tokens produced.
metric tokenspeed:inter_token_latency_seconds histogram livemax {REQUEST} 0.002,0.004,0.006,0.008,0.01,0.015,0.02,0.025,0.03,0.035,0.04,0.05,0.075,0.1 Latency between streamed tokens.
# producer 0: the scheduler of dp rank 0
op 0 set tokenspeed:num_requests_running llama,default,0 3
op 0 set tokenspeed:num_requests_running llama,default,0 9
op 0 set tokenspeed:num_requests_running llama,default,0 7
op 0 inc tokenspeed:prompt_tokens llama,default 100
op 0 inc tokenspeed:prompt_tokens llama,default 23
# chunks of 3 tokens in 0.03 s and 2 tokens in 0.1 s: weighted observations
op 0 observe tokenspeed:inter_token_latency_seconds llama,default 0.01 3
op 0 observe tokenspeed:inter_token_latency_seconds llama,default 0.05 2
# both producers write the same series: summed
op 0 inc tokenspeed:generation_tokens llama,default 100
op 1 inc tokenspeed:generation_tokens llama,default 250
op 1 inc tokenspeed:generation_tokens llama,default 0.5
"""

EXPECTED = {
    'tokenspeed:prompt_tokens_total{model_name="llama",app_key="default"}': 123,
    'tokenspeed:num_requests_running{model_name="llama",app_key="default",dp_rank="0"}': 7,
    'tokenspeed:inter_token_latency_seconds_count{model_name="llama",app_key="default"}': 5,
    'tokenspeed:inter_token_latency_seconds_sum{model_name="llama",app_key="default"}': 0.13,
    'tokenspeed:inter_token_latency_seconds_bucket{model_name="llama",app_key="default",le="0.01"}': 3,
    'tokenspeed:inter_token_latency_seconds_bucket{model_name="llama",app_key="default",le="+Inf"}': 5,
    'tokenspeed:generation_tokens_total{model_name="llama",app_key="default"}': 350.5,
}


def main():
    program = sys.argv[1]
    prometheus = sys.argv[2] if len(sys.argv) > 2 else ""
    if not prometheus or not os.path.exists(prometheus):
        skip("prometheus (Debian package prometheus) is not installed")

    failures = []
    with scraped_workload(prometheus, program, SCRIPT) as (_, server, ended):
        values = {}

        def scraped():
            values.clear()
            values.update(instant_values(server.base, EXPECTED))
            up = query(server.base, 'up{job="tokenspeed"}')
            return len(values) == len(EXPECTED) and up and up[0]["value"][1] == "1"

        eventually(scraped, interval=0.5)
        compare_values(values, EXPECTED, failures)
    return verdict(failures, ended, run_dir_removed=True)


if __name__ == "__main__":
    sys.exit(main())
