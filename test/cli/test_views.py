"""test_views.py — views (--metrics-views) through `tokenspeed-metrics`: a bad
views file, JSON or YAML, is a startup error of one line naming the file and
the key (and a YAML file's line), from `check` and `simulate` alike; a YAML
file rebuckets as a JSON one does; `check` prints the catalog's families as the
views leave them and warns of a view that selects none; in a running node of
several processes /metrics shows the viewed families (rebucketed, renamed,
a label dropped and summed, a family dropped).
Environment: TSM_BINARY (cli_harness.py).
"""
import json
import os
import signal
import subprocess
import tempfile
import unittest

import cli_harness
from cli_harness import eventually
from test_launcher import STARTUP_TIMEOUT_S, Simulation, samples, scrape

FLAG = "--metrics-views"
TTFT = "tokenspeed:time_to_first_token_seconds"


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

    def test_the_flag_is_listed_by_check_help_and_flags(self):
        for args in (("check", "--help"), ("flags",)):
            result = subprocess.run([cli_harness.BINARY, *args], capture_output=True, text=True,
                                    timeout=STARTUP_TIMEOUT_S)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn(FLAG, result.stdout)

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
