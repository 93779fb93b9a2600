"""test_views.py — views (--metrics-views) through `tokenspeed-metrics`: a bad
views file, JSON or YAML, is a startup error of one line naming the file and
the key (and a YAML file's line), from `check` and `simulate` alike; a YAML
file rebuckets as a JSON one does; `check` prints the catalog's families as the
views leave them and warns of a view that selects none, and with
--engine-metrics the engine's own families of a saved /metrics (written here
by prometheus_client) too; in a running node of several processes /metrics
shows the viewed families (rebucketed, renamed, a label dropped and summed, a
family dropped).
Environment: TSM_BINARY (cli_harness.py).
"""
import json
import os
import signal
import subprocess
import tempfile
import unittest

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

import cli_harness
from cli_harness import eventually
from test_launcher import STARTUP_TIMEOUT_S, Simulation, samples, scrape

FLAG = "--metrics-views"
ENGINE_FLAG = "--engine-metrics"
TTFT = "tokenspeed:time_to_first_token_seconds"
VLLM_TTFT = "vllm:time_to_first_token_seconds"


def vllm_exposition():
    """A vLLM-like engine's /metrics as prometheus_client writes it, with one
    family of the TokenSpeed catalog and one of the host's own among its own."""
    registry = CollectorRegistry()
    ttft = Histogram(VLLM_TTFT, "Histogram of time to first token in seconds.", ["model_name"],
                     buckets=[0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5],
                     registry=registry)
    ttft.labels(model_name="llama").observe(0.03)
    Counter("vllm:prompt_tokens", "Number of prefill tokens processed.", ["model_name"],
            registry=registry).labels(model_name="llama").inc(7)
    Gauge("vllm:num_requests_running", "Number of requests in model execution batches.",
          ["model_name"], registry=registry).labels(model_name="llama").set(3)
    Gauge("tokenspeed:num_requests_running", "Running.", ["model_name"],
          registry=registry).labels(model_name="llama").set(1)
    Gauge("tokenspeed_metrics_endpoint_connections", "The host's own.",
          registry=registry).set(1)
    return generate_latest(registry).decode()


def run(command, *args):
    return subprocess.run([cli_harness.BINARY, command, "--enable-metrics", "--metrics-port", "0",
                           *args], capture_output=True, text=True, timeout=STARTUP_TIMEOUT_S)


class Views(unittest.TestCase):

    def setUp(self):
        self.tmp = tempfile.mkdtemp(dir=cli_harness.TMP_ROOT)

    def write(self, text, name="views.json"):
        path = os.path.join(self.tmp, name)
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return path

    def test_a_bad_views_file_is_a_startup_error_naming_the_file_and_the_key(self):
        cases = [
            ('{"views": [{"select": {"name": "a"}, "bucket": [1]}]}', "views[0].bucket"),
            ('{"views": [{"select": {"name": "a", "name": "b"}}]}', "views[0].select.name"),
            ('{"views": [{"select": {"name": "a"}, "buckets": "fast"}]}', "views[0].buckets"),
            ('{"views": [{"select": {"name": "a"}, "buckets": [0.2, 0.1]}]}',
             "views[0].buckets[1]"),
            ('{"views": [{"select": {"name": "a"}, "name": "no good"}]}', "views[0].name"),
            ('{"views": [', ""),
        ]
        for text, key in cases:
            path = self.write(text)
            for command in ("check", "simulate"):
                result = run(command, FLAG, path)
                self.assertEqual(result.returncode, 2, (command, text, result.stderr))
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertIn(f"file '{path}'", result.stderr)
                if key:
                    self.assertIn(f"key '{key}'", result.stderr)
        missing = run("check", FLAG, os.path.join(self.tmp, "absent.json"))
        self.assertEqual(missing.returncode, 2, missing.stderr)
        self.assertIn(f"key '{FLAG}'", missing.stderr)
        empty = run("check", FLAG, "")
        self.assertEqual(empty.returncode, 2, empty.stderr)
        self.assertIn(f"key '{FLAG}'", empty.stderr)

    def test_a_bad_yaml_views_file_is_a_startup_error_naming_the_file_the_key_and_the_line(self):
        cases = [
            ("views:\n  - select: {name: a}\n    bucket: [1]\n", "views[0].bucket", 3),
            ("views:\n  - select:\n      name: a\n      name: b\n", "views[0].select.name", 4),
            ("views:\n  - select: &s {name: a}\n  - select: *s\n", "views[1].select", 3),
            ("views:\n  - select: {name: a}\n    buckets: ['1']\n", "views[0].buckets[0]", 3),
            ("views:\n  - select: {name: a}\n    buckets: [0.2, .nan]\n",
             "views[0].buckets[1]", 3),
            ("views: [\n", "", 2),
        ]
        for name in ("views.yaml", "views.yml"):
            for text, key, line in cases:
                path = self.write(text, name)
                for command in ("check", "simulate"):
                    result = run(command, FLAG, path)
                    self.assertEqual(result.returncode, 2, (command, text, result.stderr))
                    self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                    self.assertIn(f"file '{path}'", result.stderr)
                    self.assertIn(f"line {line}", result.stderr)
                    if key:
                        self.assertIn(f"key '{key}'", result.stderr)

    def test_a_yaml_views_file_rebuckets_a_family_in_checks_print(self):
        text = ("# the first token, finer under 100 ms\n"
                "views:\n"
                f"  - select: {{name: '{TTFT}'}}\n"
                "    buckets: [0.025, 0.05, 0.1]\n"
                "    name: llm_ttft_seconds\n")
        for name in ("views.yaml", "views"):
            path = self.write(text, name)
            result = run("check", FLAG, path)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(f"views {path}: 1 view", result.stdout)
            self.assertIn("llm_ttft_seconds histogram buckets=[0.025,0.05,0.1] "
                          "labels=[model_name,app_key] outputs=all", result.stdout)

    def test_check_prints_the_effective_definitions_and_warns_of_a_view_that_selects_nothing(self):
        path = self.write(json.dumps({"views": [
            {"select": {"name": TTFT}, "buckets": [0.025, 0.05, 0.1], "name": "llm_ttft_seconds"},
            {"select": {"name": "tokenspeed:prompt_tokens"}, "drop": True},
            {"select": {"name": "vllm:*"}, "drop": True},
        ]}))
        result = run("check", FLAG, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("llm_ttft_seconds histogram buckets=[0.025,0.05,0.1] "
                      "labels=[model_name,app_key] outputs=all", result.stdout)
        self.assertIn("tokenspeed:prompt_tokens counter dropped", result.stdout)
        self.assertIn("tokenspeed:num_requests counter labels=[model_name,app_key] outputs=all",
                      result.stdout)
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        self.assertEqual(len(warnings), 1, result.stderr)
        self.assertIn("key 'views[2].select'", warnings[0])
        self.assertIn("selects no family", warnings[0])

    def test_an_output_a_view_names_but_the_node_does_not_select_is_warned_of(self):
        path = self.write(json.dumps({"views": [
            {"select": {"name": "*_seconds"}, "outputs": ["prometheus", "otlp"]}]}))
        result = run("check", FLAG, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        self.assertEqual(len(warnings), 1, result.stderr)
        self.assertIn("key 'views[0].outputs[1]'", warnings[0])
        self.assertIn("'otlp' is not a selected output", warnings[0])

    def test_check_warns_of_a_name_views_give_to_families_defined_differently(self):
        path = self.write(json.dumps({"views": [
            {"select": {"name": "tokenspeed:num_requests_running"}, "name": "llm:requests"},
            {"select": {"name": "tokenspeed:num_requests_waiting"}, "name": "llm:requests"},
            # Two families that views make alike may share a name: not warned of.
            {"select": {"name": "tokenspeed:prompt_tokens"}, "name": "llm:tokens",
             "help": "Tokens."},
            {"select": {"name": "tokenspeed:generation_tokens"}, "name": "llm:tokens",
             "help": "Tokens."},
        ]}))
        result = run("check", FLAG, path)
        self.assertEqual(result.returncode, 0, result.stderr)
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        self.assertEqual(len(warnings), 1, result.stderr)
        self.assertIn("key 'views[0].name'", warnings[0])
        self.assertIn("gives the name 'llm:requests' to families defined differently "
                      "('tokenspeed:num_requests_running', 'tokenspeed:num_requests_waiting')",
                      warnings[0])

    def test_the_flag_is_listed_by_check_help_and_flags(self):
        for args in (("check", "--help"), ("flags",)):
            result = subprocess.run([cli_harness.BINARY, *args], capture_output=True, text=True,
                                    timeout=STARTUP_TIMEOUT_S)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(FLAG, result.stdout)

    def test_check_prints_an_engines_families_of_its_exposition_as_the_views_leave_them(self):
        engine = self.write(vllm_exposition(), "engine-metrics.txt")
        views = self.write(json.dumps({"views": [
            {"select": {"name": VLLM_TTFT}, "buckets": [0.05, 0.1, 0.3]},
            {"select": {"name": "vllm:num_requests_*"}, "drop_labels": ["model_name"]},
        ]}))
        result = run("check", FLAG, views, ENGINE_FLAG, engine)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"engine metrics {engine}: 3 families (1 more of the catalog, above; "
                      "1 of the host's own left out); the engine's own, as the views leave them",
                      result.stdout)
        self.assertIn(f"  {VLLM_TTFT} histogram buckets=[0.05,0.1,0.3] labels=[model_name] "
                      "outputs=all help=\"Histogram of time to first token in seconds.\"",
                      result.stdout)
        self.assertIn("  vllm:prompt_tokens counter labels=[model_name]", result.stdout)
        self.assertIn("  vllm:num_requests_running gauge labels=[] outputs=all", result.stdout)
        # The catalog's family the engine gives again is printed once.
        self.assertEqual(result.stdout.count("tokenspeed:num_requests_running "), 1,
                         result.stdout)
        self.assertNotIn("warning", result.stderr)
        # Without the exposition, both views select nothing check knows.
        alone = run("check", FLAG, views)
        self.assertEqual(alone.returncode, 0, alone.stderr)
        self.assertEqual(alone.stderr.count("selects no family"), 2, alone.stderr)
        self.assertNotIn(VLLM_TTFT, alone.stdout)

    def test_with_an_exposition_a_view_selecting_nothing_is_warned_of_without_naming_the_engine(
            self):
        engine = self.write(vllm_exposition(), "engine-metrics.txt")
        views = self.write(json.dumps({"views": [{"select": {"name": "sglang:*"}, "drop": True}]}))
        result = run("check", FLAG, views, ENGINE_FLAG, engine)
        self.assertEqual(result.returncode, 0, result.stderr)
        warnings = [line for line in result.stderr.splitlines() if "warning" in line]
        self.assertEqual(len(warnings), 1, result.stderr)
        self.assertIn("key 'views[0].select'", warnings[0])
        self.assertIn(f"selects no family of the TokenSpeed catalog or of the engine's "
                      f"exposition '{engine}'", warnings[0])
        self.assertNotIn("engine defines", warnings[0])

    def test_without_views_check_prints_the_exposition_families_as_the_engine_defines_them(self):
        engine = self.write(vllm_exposition(), "engine-metrics.txt")
        result = run("check", ENGINE_FLAG, engine)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"engine metrics {engine}: 4 families (1 of the host's own left out); "
                      "as the engine defines them (no views)",
                      result.stdout)
        self.assertIn(f"  {VLLM_TTFT} histogram buckets=[0.001,0.005,0.01,0.02,0.04,0.06,0.08,"
                      "0.1,0.25,0.5] labels=[model_name] outputs=all", result.stdout)
        self.assertIn("  tokenspeed:num_requests_running gauge labels=[model_name]", result.stdout)
        self.assertNotIn("the TokenSpeed catalog's families", result.stdout)
        self.assertNotIn("tokenspeed_metrics_", result.stdout)

    def test_a_bad_engine_exposition_is_a_startup_error_of_one_line_naming_the_file(self):
        cases = [
            ('# TYPE x gauge\nx{a="1} 2\n', "key 'line 2'"),
            ("# TYPE x timer\n", "key 'line 1'"),
            (vllm_exposition() + "vllm:up\n", "key 'line"),
        ]
        views = self.write(json.dumps({"views": [{"select": {"name": "*"}}]}))
        for text, key in cases:
            engine = self.write(text, "engine-metrics.txt")
            for args in ((ENGINE_FLAG, engine), (FLAG, views, ENGINE_FLAG, engine)):
                result = run("check", *args)
                self.assertEqual(result.returncode, 2, (text, result.stderr))
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertIn(f"file '{engine}'", result.stderr)
                self.assertIn(key, result.stderr)
                self.assertEqual(result.stdout, "")
        for path in (os.path.join(self.tmp, "absent.txt"), self.tmp, ""):
            result = run("check", ENGINE_FLAG, path)
            self.assertEqual(result.returncode, 2, result.stderr)
            self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
            self.assertIn(f"key '{ENGINE_FLAG}'", result.stderr)

    def test_the_engine_metrics_flag_is_checks_alone(self):
        check = subprocess.run([cli_harness.BINARY, "check", "--help"], capture_output=True,
                               text=True, timeout=STARTUP_TIMEOUT_S)
        self.assertEqual(check.returncode, 0, check.stderr)
        self.assertIn(f"{ENGINE_FLAG} FILE", check.stdout)
        flags = subprocess.run([cli_harness.BINARY, "flags"], capture_output=True, text=True,
                               timeout=STARTUP_TIMEOUT_S)
        self.assertNotIn(ENGINE_FLAG, flags.stdout)
        simulate = run("simulate", ENGINE_FLAG, os.path.join(self.tmp, "engine-metrics.txt"))
        self.assertEqual(simulate.returncode, 2, simulate.stderr)
        self.assertIn(ENGINE_FLAG, simulate.stderr)

    def test_every_process_of_a_node_records_the_viewed_families(self):
        path = self.write(json.dumps({"views": [
            {"select": {"name": TTFT}, "buckets": [0.05, 0.1, 0.2], "name": "llm_ttft_seconds",
             "help": "first token"},
            {"select": {"name": "tokenspeed:num_requests"}, "drop_labels": ["app_key"]},
            {"select": {"name": "tokenspeed:prompt_tokens"}, "drop": True},
        ]}))
        simulation = Simulation("--ranks", "2", FLAG, path)
        try:
            url = simulation.metrics_url()

            def names():
                return {name for name, _, _ in samples(scrape(url))}

            self.assertTrue(eventually(lambda: "llm_ttft_seconds_count" in names() and
                                       "tokenspeed:num_requests_total" in names(), 60),
                            simulation.describe())
            exposition = samples(scrape(url))
            bounds = {labels["le"] for name, labels, _ in exposition
                      if name == "llm_ttft_seconds_bucket"}
            self.assertEqual(bounds, {"0.05", "0.1", "0.2", "+Inf"})
            self.assertFalse([name for name, _, _ in exposition
                              if name.startswith(TTFT) or name.startswith("tokenspeed:prompt_tokens")])
            requests = [labels for name, labels, _ in exposition
                        if name == "tokenspeed:num_requests_total"]
            self.assertTrue(requests)
            for labels in requests:
                self.assertNotIn("app_key", labels)
            simulation.process.send_signal(signal.SIGTERM)
            self.assertEqual(simulation.wait(), 0, simulation.describe())
        finally:
            simulation.kill()


if __name__ == "__main__":
    unittest.main()
