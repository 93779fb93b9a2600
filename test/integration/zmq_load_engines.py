"""zmq_load_engines.py — the presets under the call shapes of the engines
(the families, labels and kinds TokenSpeed, vLLM and SGLang record, as in
test/python/engine_patterns/), read by a python3-zmq SUB: TokenSpeed's KV
ratio times the configured capacity, or a capacity gauge named by `map`;
vLLM's capacity from cache_config_info's num_gpu_blocks x block_size, its
rank in the engine label; SGLang's tokens and capacity gauges; without a
capacity, 0 for both. Families outside the feed are settled as sent, a rank
label that is no rank is refused.
"""
import unittest

import zmq_load_common as zc


class EngineShapes(zc.FeedCase):
    PORTS = 4

    def feed(self, offset, calls, expected, **options):
        """Runs calls (driver -> None) and waits for expected on port + offset."""
        driver = self.driver(**options)
        sub = self.subscriber(offset)
        calls(driver)
        sub.wait_for(lambda m: expected in zc.load_stats(m), f"{expected}")
        return driver

    def test_tokenspeed_kv_ratio_times_the_configured_capacity(self):
        labels = {"model_name": "tiny-llama", "dp_rank": 1}

        def calls(driver):
            driver.set("tokenspeed:num_requests_running", 12, **labels)
            driver.set("tokenspeed:num_requests_waiting", 4, **labels)
            driver.set("tokenspeed:kv_cache_usage_perc", 0.37, **labels)
            driver.inc("tokenspeed:prompt_tokens_total", 100, **labels)
        driver = self.feed(1, calls, ["LoadStat", 12, 4, 3700, 10000, 1], capacity=10000)
        figures = driver.close()
        self.assertEqual((figures["sent"], figures["refused"], figures["lost"]), (4, 0, 0),
                         figures)

    def test_tokenspeed_capacity_from_a_gauge_named_by_map(self):
        def calls(driver):
            driver.set("tokenspeed:kv_cache_usage_perc", 0.5, dp_rank=0)
            driver.set("tokenspeed:kv_capacity_tokens", 4096, dp_rank=0)
        self.feed(0, calls, ["LoadStat", 0, 0, 2048, 4096, 0],
                  map="max_total_num_tokens=tokenspeed:kv_capacity_tokens")

    def test_vllm_capacity_from_cache_config_info_and_rank_from_engine(self):
        def calls(driver):
            driver.set("vllm:cache_config_info", 1, block_size=16, cache_dtype="auto",
                       num_gpu_blocks=2048, engine=2)
            driver.set("vllm:num_requests_running", 7, model_name="tiny-llama", engine=2)
            driver.set("vllm:num_requests_waiting", 1, model_name="tiny-llama", engine=2)
            driver.set("vllm:kv_cache_usage_perc", 0.25, model_name="tiny-llama", engine=2)
        self.feed(2, calls, ["LoadStat", 7, 1, 8192, 32768, 2], preset="vllm",
                  rank_label="engine")

    def test_sglang_tokens_and_capacity_gauges(self):
        labels = {"model_name": "tiny-llama", "tp_rank": 0, "dp_rank": 3}

        def calls(driver):
            driver.set("sglang:num_running_reqs", 30, **labels)
            driver.set("sglang:num_queue_reqs", 6, **labels)
            driver.set("sglang:num_used_tokens", 51234, **labels)
            driver.set("sglang:max_total_num_tokens", 300000, **labels)
            driver.set("sglang:token_usage", 0.17, **labels)
        self.feed(3, calls, ["LoadStat", 30, 6, 51234, 300000, 3], preset="sglang")

    def test_without_a_capacity_tokens_and_capacity_are_0(self):
        def calls(driver):
            driver.set("tokenspeed:num_requests_running", 2, dp_rank=0)
            driver.set("tokenspeed:kv_cache_usage_perc", 0.9, dp_rank=0)
        self.feed(0, calls, ["LoadStat", 2, 0, 0, 0, 0])

    def test_a_rank_label_that_is_no_rank_is_refused(self):
        def calls(driver):
            driver.set("tokenspeed:num_requests_running", 2, dp_rank="x")
            driver.set("tokenspeed:num_requests_running", 2, dp_rank=99)
            driver.set("tokenspeed:num_requests_running", 1, dp_rank=0)
        driver = self.feed(0, calls, ["LoadStat", 1, 0, 0, 0, 0])
        figures = driver.close()
        self.assertEqual((figures["refused"], figures["events_invalid"]), (2, 2), figures)


if __name__ == "__main__":
    unittest.main()
