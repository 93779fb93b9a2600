"""zmq_load_rmp_serde.py — Dynamo's own decoder of the dynamo_fpm_v1
messages: rmp_serde 1.1 (Debian's librust-rmp-serde-dev) decodes what a SUB
received from the zmq_load sink into #[serde(default)] structs of
ForwardPassMetrics' shape (test/rmp_decoder), and every value it reads
equals the one set: a commit of the whole fpm group, and an all-zero
heartbeat. The decoder is built offline from Debian's crate registry into
the build folder; without cargo or the crates the test is skipped.
"""
import os
import shutil
import subprocess
import sys
import unittest

import zmq_load_common as zc

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "rmp_decoder")
REGISTRY = "/usr/share/cargo/registry"
BUILD_TIMEOUT_S = 600  # a hang guard: the first build compiles serde_derive on a loaded machine

VALUES = {  # the fpm gauges as the engine sets them, Dynamo's names
    "scheduled.num_prefill_requests": 3, "scheduled.sum_prefill_tokens": 4096,
    "scheduled.var_prefill_length": 17.25, "scheduled.sum_prefill_kv_tokens": 1024,
    "scheduled.num_decode_requests": 64, "scheduled.sum_decode_kv_tokens": 1048576,
    "scheduled.var_decode_kv_tokens": 0.5, "queued.num_prefill_requests": 7,
    "queued.sum_prefill_tokens": 20000, "queued.var_prefill_length": 2.0,
    "queued.num_decode_requests": 2, "queued.sum_decode_kv_tokens": 650,
    "queued.var_decode_kv_tokens": 1.5,
}


def build_decoder():
    """The decoder's executable, built in a copy of test/rmp_decoder (cargo
    writes its lock file there); None (with the reason) when it cannot be."""
    cargo = shutil.which("cargo")
    if cargo is None:
        return None, "no cargo"
    for crate in ("rmp-serde-1", "serde_derive-1"):
        if not any(name.startswith(crate) for name in os.listdir(REGISTRY)
                   if os.path.isdir(REGISTRY)):
            return None, f"no {crate}* in {REGISTRY} (install librust-rmp-serde-dev)"
    # Beside the tests' temporary files (the build folder), kept between runs.
    root = os.environ.get("TSM_TEST_TMPDIR")
    work = os.path.join(root, "..", "rmp_decoder") if root else zc.make_tmp()
    shutil.copytree(SOURCE, work, dirs_exist_ok=True)
    result = subprocess.run([cargo, "build", "--offline", "--quiet", "-j1"], cwd=work,
                            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"the decoder does not build offline:\n{result.stderr}")
    return os.path.join(work, "target", "debug", "fpm-decoder"), None


def decode(decoder, payloads):
    """What rmp_serde read of each payload: [{name: text}]."""
    result = subprocess.run([decoder], input="".join(p.hex() + "\n" for p in payloads),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return [dict(pair.split("=", 1) for pair in line.split()) for line in
            result.stdout.splitlines()]


class DynamoDecoder(unittest.TestCase):
    def test_rmp_serde_reads_every_value_of_a_commit_and_a_heartbeat(self):
        decoder, why = build_decoder()
        if decoder is None:
            print(f"skipped: {why}")
            sys.exit(77)
        port = zc.free_ports(2)
        driver = zc.Driver(f"tcp://127.0.0.1:{port}", schema="dynamo_fpm_v1",
                           worker_id=7340032)
        self.addCleanup(driver.kill)
        sub = zc.Subscriber(f"tcp://127.0.0.1:{port + 1}")
        self.addCleanup(sub.close)
        driver.set("tokenspeed:fpm_queued_num_prefill_requests", 0, dp_rank=1)
        sub.wait_for(lambda m: m, "a heartbeat of rank 1")
        for name, value in VALUES.items():
            driver.set("tokenspeed:fpm_" + name.replace(".", "_"), value, dp_rank=1)
        driver.inc("tokenspeed:fpm_iterations_total", 1, dp_rank=1)
        messages = sub.wait_for(lambda m: any(zc.payload(f)["wall_time"] for _, f in m),
                                "the commit")
        commit = next(f for _, f in messages if zc.payload(f)["wall_time"])
        heartbeat = messages[0][1]
        read_commit, read_heartbeat = decode(decoder, [commit[2], heartbeat[2]])
        self.assertEqual(read_commit["version"], "1")
        self.assertEqual(read_commit["worker_id"], "7340032")
        self.assertEqual(read_commit["dp_rank"], "1")
        self.assertEqual(int(read_commit["counter_id"]), zc.sequence(commit[1]))
        self.assertEqual(float(read_commit["wall_time"]), zc.payload(commit)["wall_time"])
        for name, value in VALUES.items():
            self.assertEqual(float(read_commit[name]), value, name)
        self.assertEqual(float(read_heartbeat["wall_time"]), 0.0)
        for name in VALUES:
            self.assertEqual(float(read_heartbeat[name]), 0.0, name)


if __name__ == "__main__":
    unittest.main()
