"""zmq_load_golden.py — the issue's golden vectors, read off the wire by a
python3-zmq SUB and compared byte for byte with what python3-msgpack packs:
LoadStat 7, 3, 1024, 8192 of rank 2 is ["LoadStat",7,3,1024,8192,2] on
port + 2 under topic b"load"; an unset rank is ["LoadStat",0,0,0,0,None];
a ForwardPassMetrics commit is the map of every field in declaration order
under topic b"", counter_id its sequence number; without the fpm group,
counts-only messages (none with require_full_fpm); the sequence numbers of
a socket count from 0 by one per message sent.
"""
import time
import unittest

import msgpack

import zmq_load_common as zc

FPM_VALUES = {  # map key -> value set on the tokenspeed:fpm_* gauge
    "fpm_scheduled_num_prefill_requests": 2, "fpm_scheduled_sum_prefill_tokens": 3000,
    "fpm_scheduled_var_prefill_length": 12.5, "fpm_scheduled_sum_prefill_kv_tokens": 512,
    "fpm_scheduled_num_decode_requests": 40, "fpm_scheduled_sum_decode_kv_tokens": 70000,
    "fpm_scheduled_var_decode_kv_tokens": 0.25, "fpm_queued_num_prefill_requests": 5,
    "fpm_queued_sum_prefill_tokens": 9000, "fpm_queued_var_prefill_length": 3.0,
    "fpm_queued_num_decode_requests": 1, "fpm_queued_sum_decode_kv_tokens": 300,
    "fpm_queued_var_decode_kv_tokens": 0.0,
}


def group(prefix, names):
    return {name: (float(FPM_VALUES[prefix + name]) if name.startswith("var_")
                   else FPM_VALUES[prefix + name]) for name in names}


class GoldenVectors(zc.FeedCase):
    PORTS = 4

    def test_loadstat_of_rank_2_is_the_golden_array_byte_for_byte_on_port_plus_2(self):
        driver = self.driver(preset="sglang")
        sub = self.subscriber(2)
        for family, value in (("sglang:num_running_reqs", 7), ("sglang:num_queue_reqs", 3),
                              ("sglang:num_used_tokens", 1024),
                              ("sglang:max_total_num_tokens", 8192)):
            driver.set(family, value, dp_rank=2)
        golden = msgpack.packb(["LoadStat", 7, 3, 1024, 8192, 2])
        messages = sub.wait_for(lambda m: any(f[2] == golden for _, f in m),
                                "the golden LoadStat of rank 2")
        frames = next(f for _, f in messages if f[2] == golden)
        self.assertEqual(len(frames), 3)
        self.assertEqual(frames[0], b"load")
        self.assertEqual(zc.payload(frames), ["LoadStat", 7, 3, 1024, 8192, 2])
        self.assert_sequence_counts_from_zero(driver, sub)

    def test_an_unset_rank_sends_nil_for_attn_dp_rank(self):
        driver = self.driver(preset="sglang")
        sub = self.subscriber(0)
        driver.set("sglang:num_running_reqs", 0)
        golden = msgpack.packb(["LoadStat", 0, 0, 0, 0, None])
        self.assertEqual(golden, b"\x96\xa8LoadStat\x00\x00\x00\x00\xc0")
        messages = sub.wait_for(lambda m: m, "a LoadStat of the unset rank")
        self.assertEqual(messages[0][1][2], golden)

    def test_a_forward_pass_commit_is_the_full_map_in_declaration_order(self):
        worker_id = 2 ** 64 - 1
        driver = self.driver(schema="dynamo_fpm_v1", worker_id=worker_id)
        sub = self.subscriber(1)
        # The subscriber hears the rank's heartbeats before the commit.
        driver.set("tokenspeed:fpm_scheduled_num_prefill_requests", 0, dp_rank=1)
        sub.wait_for(lambda m: m, "a heartbeat of rank 1")
        for key, value in FPM_VALUES.items():
            driver.set("tokenspeed:" + key, value, dp_rank=1)
        before = time.time()
        driver.inc("tokenspeed:fpm_iterations_total", 1, dp_rank=1)
        messages = sub.wait_for(lambda m: any(zc.payload(f)["wall_time"] != 0.0 for _, f in m),
                                "the forward pass of the commit")
        frames = next(f for _, f in messages if zc.payload(f)["wall_time"] != 0.0)
        self.assertEqual(frames[0], b"")
        decoded = zc.payload(frames)
        self.assertLessEqual(abs(decoded["wall_time"] - before), 30)
        scheduled = ["num_prefill_requests", "sum_prefill_tokens", "var_prefill_length",
                     "sum_prefill_kv_tokens", "num_decode_requests", "sum_decode_kv_tokens",
                     "var_decode_kv_tokens"]
        queued = ["num_prefill_requests", "sum_prefill_tokens", "var_prefill_length",
                  "num_decode_requests", "sum_decode_kv_tokens", "var_decode_kv_tokens"]
        expected = {
            "version": 1, "worker_id": worker_id, "dp_rank": 1,
            "counter_id": zc.sequence(frames[1]), "wall_time": decoded["wall_time"],
            "scheduled_requests": group("fpm_scheduled_", scheduled),
            "queued_requests": group("fpm_queued_", queued),
        }
        self.assertEqual(frames[2], msgpack.packb(expected))
        self.assertEqual(list(decoded), list(expected))  # declaration order

    def test_counts_only_forward_passes_serve_the_router_without_the_fpm_group(self):
        driver = self.driver(schema="dynamo_fpm_v1")
        sub = self.subscriber(0)
        driver.set("tokenspeed:num_requests_running", 1, dp_rank=0)
        sub.wait_for(lambda m: m, "a heartbeat of rank 0")
        driver.set("tokenspeed:num_requests_running", 5, dp_rank=0)
        driver.set("tokenspeed:num_requests_waiting", 2, dp_rank=0)

        def counts(message):
            body = zc.payload(message[1])
            return (body["scheduled_requests"]["num_decode_requests"],
                    body["queued_requests"]["num_prefill_requests"], body["wall_time"])
        messages = sub.wait_for(lambda m: any(counts(x)[:2] == (5, 2) for x in m),
                                "a counts-only forward pass")
        wall_times = [counts(x)[2] for x in messages if counts(x)[:2] == (5, 2)]
        self.assertTrue(any(t > 0 for t in wall_times), wall_times)
        # Idle, the heartbeats keep the counts (wall_time 0.0).
        messages = sub.wait_for(lambda m: counts(m[-1]) == (5, 2, 0.0), "a counts heartbeat")

    def test_require_full_fpm_never_sends_counts_only_messages(self):
        driver = self.driver(schema="dynamo_fpm_v1", require_full_fpm=1)
        sub = self.subscriber(0)
        driver.set("tokenspeed:num_requests_running", 5, dp_rank=0)
        driver.set("tokenspeed:num_requests_waiting", 2, dp_rank=0)
        messages = sub.wait_for(lambda m: len(m) >= 2, "two heartbeats")
        for _, frames in messages:
            body = zc.payload(frames)
            self.assertEqual(body["wall_time"], 0.0)
            self.assertEqual(set(body["scheduled_requests"].values()), {0})
            self.assertEqual(set(body["queued_requests"].values()), {0})

    def assert_sequence_counts_from_zero(self, driver, sub):
        # Heartbeats follow; every message the socket sent has its number.
        sub.wait_for(lambda m: len(m) >= 3, "three messages")
        sent = driver.figures()["messages_sent"]
        messages = sub.wait_for(lambda m: zc.sequence(m[-1][1][1]) + 1 >= sent,
                                f"the message numbered {sent - 1}")
        seqs = [zc.sequence(f[1]) for _, f in messages]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))), seqs)
        self.assertGreaterEqual(seqs[-1] + 1, sent)
        self.assertLessEqual(seqs[-1] + 1, driver.figures()["messages_sent"])


if __name__ == "__main__":
    unittest.main()
