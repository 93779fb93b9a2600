"""The zmq_load output driven by the engine programs (tokenspeed_program.py,
vllm_program.py, sglang_program.py: TokenSpeed's, vLLM's and SGLang's call
shapes) through tokenspeed_metrics.prometheus_client: a python3-zmq SUB on
each rank's port (the endpoint's port plus the rank, read from the label the
engine puts it in) hears a LoadStat whose values are the launcher's /metrics
gauges of that rank once the producers recorded: running and waiting, and
round(KV ratio x capacity) with the capacity from the settings (`map` points
the ratio at the family the engine records when the preset's differs).
Skipped without python3-zmq, python3-msgpack or the zmq_load plugin."""
import json
import os
import socket
import subprocess
import sys
import threading

import pytest
from prometheus_client.parser import text_string_to_metric_families

zmq = pytest.importorskip("zmq")
msgpack = pytest.importorskip("msgpack")

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN_DIR = os.environ.get("TSM_ZMQ_LOAD_DIR", "")
TIMEOUT_S = 300  # hang guard only
CAPACITY = 1000

# program: (settings, ranks, rank label, running, waiting, KV ratio family)
ENGINES = {
    "tokenspeed": ("tokenspeed_program.py",
                   {"preset": "tokenspeed", "rank_label": "tp_rank",
                    "map": {"kv_usage_ratio": "tokenspeed:kv_cache_usage_ratio"}},
                   [0, 1], "tp_rank", "tokenspeed:num_requests_running",
                   "tokenspeed:num_requests_waiting", "tokenspeed:kv_cache_usage_ratio"),
    "vllm": ("vllm_program.py", {"preset": "vllm", "rank_label": "engine"}, [0, 1, 2], "engine",
             "vllm:num_requests_running", "vllm:num_requests_waiting",
             "vllm:kv_cache_usage_perc"),
    "sglang": ("sglang_program.py",
               {"preset": "sglang", "rank_label": "tp_rank",
                "map": {"kv_usage_ratio": "sglang:token_usage"}},
               [0, 1], "tp_rank", "sglang:num_running_reqs", None, "sglang:token_usage"),
}


def consecutive_free_ports(count):
    for _ in range(100):
        probes = []
        try:
            probe = socket.socket()
            probes.append(probe)
            probe.bind(("127.0.0.1", 0))
            base = probe.getsockname()[1]
            for port in range(base + 1, base + count):
                probes.append(socket.socket())
                probes[-1].bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for probe in probes:
                probe.close()
    raise AssertionError("no consecutive free ports")


class Subscriber:
    """A SUB on one port keeping every LoadStat it hears, on a thread."""

    def __init__(self, context, port):
        self.socket = context.socket(zmq.SUB)
        self.socket.setsockopt(zmq.LINGER, 0)
        self.socket.setsockopt(zmq.SUBSCRIBE, b"load")
        self.socket.connect(f"tcp://127.0.0.1:{port}")
        self.stats = []
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            if self.socket.poll(50):
                self.stats.append(msgpack.unpackb(self.socket.recv_multipart()[2]))

    def close(self):
        self.running = False
        self.thread.join(5)
        self.socket.close()


def gauges(exposition, name, rank_label):
    """{rank: value} of one gauge family."""
    out = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if sample.name == name:
                out[int(sample.labels[rank_label])] = sample.value
    return out


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_each_ranks_feed_carries_its_metrics_gauges(engine, workdir):
    if not os.path.isfile(os.path.join(PLUGIN_DIR, "zmq_load.so")):
        pytest.skip("the zmq_load plugin is not built")
    program, settings, ranks, label, running, waiting, ratio = ENGINES[engine]
    port = consecutive_free_ports(len(ranks))
    config = os.path.join(workdir, "outputs.json")
    with open(config, "w") as out:
        json.dump({"zmq_load": dict(settings, endpoint=f"tcp://127.0.0.1:{port}",
                                    max_total_num_tokens=CAPACITY)}, out)
    context = zmq.Context()
    subs = {rank: Subscriber(context, port + rank) for rank in ranks}
    try:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
        env.update(ENGINE_PATTERNS_CLIENT="tokenspeed_metrics", ENGINE_PATTERNS_ZERO_LINE="0",
                   ENGINE_PATTERNS_LINGER_S="1.5",
                   ENGINE_PATTERNS_FLAGS=json.dumps([
                       "--metrics-reporters", "prometheus,zmq_load",
                       "--metrics-reporter-config", config, "--metrics-plugin-dir", PLUGIN_DIR]))
        result = subprocess.run([sys.executable, os.path.join(HERE, program), workdir],
                                capture_output=True, text=True, timeout=TIMEOUT_S, env=env,
                                check=False)
        assert result.returncode == 0, result.stderr
    finally:
        for sub in subs.values():
            sub.close()
        context.term()
    exposition = json.loads(result.stdout)["exposition"]
    running_of = gauges(exposition, running, label)
    waiting_of = gauges(exposition, waiting, label) if waiting else {}
    ratio_of = gauges(exposition, ratio, label)
    for rank in ranks:
        expected = ["LoadStat", int(running_of[rank]), int(waiting_of.get(rank, 0)),
                    round(ratio_of[rank] * CAPACITY), CAPACITY, rank]
        assert subs[rank].stats, f"rank {rank} heard nothing\n{result.stderr}"
        assert subs[rank].stats[-1] == expected, (rank, subs[rank].stats[-3:], expected)
