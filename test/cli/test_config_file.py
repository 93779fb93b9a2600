"""The --metrics-reporter-config file: a JSON object mapping external reporter
names to settings. Every error fails startup with exit status 2 and one line
naming the file, the reporter and the key."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

DIRS = h.dirs_flags(h.plugin_dir("echo_config"), h.plugin_dir("node_session"),
                    h.plugin_dir("validate_rejects"), h.plugin_dir("validate_returns_non_object"))


class ConfigFile(h.CliTestCase):

    def check_with(self, content, *reporters):
        path = self.write_config(content)
        selection = ",".join(reporters) if reporters else "echo_config"
        result = self.check("--enable-metrics", "--metrics-reporters", selection,
                            "--metrics-reporter-config", path, *DIRS)
        return result, path

    # ---------------------------------------------------------- accepted files
    def test_external_output_without_an_entry_receives_an_empty_object(self):
        result, _ = self.check_with({"node_session": {"marker_dir": ""}},
                                    "echo_config", "node_session")
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["echo_config: {}", 'node_session: {"marker_dir":""}'])

    def test_external_output_without_a_config_file_receives_an_empty_object(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "echo_config", *DIRS)
        self.assertEqual(lines, ["echo_config: {}"])

    def test_entry_is_passed_to_validate_and_printed_compact(self):
        result, _ = self.check_with('{\n  "echo_config": {\n    "endpoint": "https://m.example",\n'
                                    '    "queue_size": 10000,\n    "labels": {"a": [1, 2]}\n  }\n}\n')
        self.assert_ok(result)
        self.assertEqual(len(result.stdout_lines), 1, result.describe())
        line = result.stdout_lines[0]
        self.assertTrue(line.startswith("echo_config: "), result.describe())
        printed = line[len("echo_config: "):]
        self.assertNotIn(": ", printed, "compact JSON\n" + result.describe())
        self.assertNotIn(", ", printed, "compact JSON\n" + result.describe())
        self.assertEqual(json.loads(printed), {"endpoint": "https://m.example",
                                               "queue_size": 10000, "labels": {"a": [1, 2]}})

    def test_empty_object_file_is_accepted(self):
        result, _ = self.check_with({})
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["echo_config: {}"])

    # ---------------------------------------------------------- file errors
    def test_missing_file_fails_startup_naming_it(self):
        missing = os.path.join(self.make_dir(), "absent.json")
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            "--metrics-reporter-config", missing, *DIRS)
        self.assert_startup_error(result, f"file '{missing}'")

    # A FIFO, a device, a directory or a huge file is refused before any read
    # that could block or exhaust memory (run() times out a hang at 60 s).
    def test_fifo_fails_startup_at_once_naming_it(self):
        path = os.path.join(self.make_dir(), "metrics.json")
        os.mkfifo(path)
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            "--metrics-reporter-config", path, *DIRS)
        self.assert_startup_error(result, f"file '{path}'",
                                  "the reporter configuration is not a regular file (a FIFO)")

    def test_fifo_fails_simulate_at_once_with_exit_status_2(self):
        path = os.path.join(self.make_dir(), "metrics.json")
        os.mkfifo(path)
        result = h.run("simulate", "--enable-metrics", "--metrics-port", "0",
                       "--metrics-reporters", "echo_config", "--metrics-reporter-config", path,
                       "--duration", "1", *DIRS)
        self.assert_startup_error(result, f"file '{path}'", "not a regular file (a FIFO)")

    def test_dev_stdin_is_read_from_a_redirected_file_and_refused_from_a_pipe(self):
        path = os.path.join(self.make_dir(), "metrics.json")
        with open(path, "w") as config:
            json.dump({"echo_config": {}}, config)
        command = [h.BINARY, "check", "--enable-metrics", "--metrics-reporters", "echo_config",
                   "--metrics-reporter-config", "/dev/stdin", *DIRS]
        with open(path) as redirected:
            result = h.Result(command, subprocess.run(
                command, stdin=redirected, env=h.clean_environment(), capture_output=True,
                text=True, timeout=60, check=False))
        self.assert_ok(result)
        with open(path) as source:
            piped = subprocess.Popen(["cat"], stdin=source, stdout=subprocess.PIPE)
            result = h.Result(command, subprocess.run(
                command, stdin=piped.stdout, env=h.clean_environment(), capture_output=True,
                text=True, timeout=60, check=False))
            piped.stdout.close()
            piped.wait(timeout=60)
        self.assert_startup_error(result, "file '/dev/stdin'", "not a regular file (a FIFO)")

    def test_character_device_fails_startup_without_reading_it(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            "--metrics-reporter-config", "/dev/zero", *DIRS)
        self.assert_startup_error(result, "file '/dev/zero'",
                                  "the reporter configuration is not a regular file "
                                  "(a character device)")

    def test_directory_fails_startup_as_a_directory(self):
        directory = self.make_dir()
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            "--metrics-reporter-config", directory, *DIRS)
        line = self.assert_startup_error(result, f"file '{directory}'",
                                         "the reporter configuration is a directory")
        self.assertNotIn("invalid JSON", line)

    def test_file_over_16_mib_fails_startup_naming_the_limit(self):
        path = os.path.join(self.make_dir(), "metrics.json")
        with open(path, "wb") as out:
            out.truncate(64 << 30)  # sparse: 64 GiB that take no disk
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            "--metrics-reporter-config", path, *DIRS)
        self.assert_startup_error(result, f"file '{path}'",
                                  "the reporter configuration is larger than the limit of 16 MiB")

    def test_file_of_16_mib_is_read(self):
        content = '{"echo_config": {"endpoint": "'
        content += "x" * ((16 << 20) - len(content) - 3) + '"}}'
        self.assertEqual(len(content), 16 << 20)
        result, _ = self.check_with(content)
        self.assert_ok(result)

    def test_a_two_megabyte_key_is_cut_in_the_error(self):
        name = "n" * (2 << 20)
        result, path = self.check_with({name: {}})
        line = self.assert_startup_error(result, f"file '{path}'",
                                         "n" * 120 + f"... ({2 << 20} bytes)",
                                         "configuration for an output that is not selected")
        self.assertLess(len(line), 2000, "the key is cut, not repeated in full")

    def test_a_two_megabyte_duplicate_key_is_cut_in_the_error(self):
        name = "d" * (2 << 20)
        result, path = self.check_with('{"echo_config": {"%s": 1, "%s": 2}}' % (name, name))
        line = self.assert_startup_error(result, f"file '{path}'", "duplicate key",
                                         f"... ({2 << 20} bytes)")
        self.assertLess(len(line), 2000, "the key is cut, not repeated in full")

    def test_invalid_json_fails_startup(self):
        for text in ('{"echo_config": {}', '{"echo_config": {},}', "", "not json",
                     '{"echo_config": {}} trailing'):
            with self.subTest(text=text):
                result, path = self.check_with(text)
                self.assert_startup_error(result, "invalid JSON", f"file '{path}'")

    def test_top_level_that_is_not_an_object_fails_startup(self):
        for text in ("[]", '"echo_config"', "42", "null"):
            with self.subTest(text=text):
                result, path = self.check_with(text)
                self.assert_startup_error(result, "must be a JSON object", f"file '{path}'")

    def test_entry_that_is_not_an_object_fails_startup(self):
        for value in ([], "https://m.example", 3, None, True):
            with self.subTest(value=value):
                result, path = self.check_with({"echo_config": value})
                self.assert_startup_error(result, "must be a JSON object", f"file '{path}'",
                                          "reporter 'echo_config'", "key 'echo_config'")

    def test_duplicate_top_level_key_fails_startup(self):
        result, path = self.check_with('{"echo_config": {}, "echo_config": {"endpoint": "x"}}')
        self.assert_startup_error(result, "duplicate key", f"file '{path}'",
                                  "key 'echo_config'")

    def test_duplicate_key_inside_an_entry_fails_startup(self):
        result, path = self.check_with(
            '{"echo_config": {"endpoint": "a", "queue_size": 1, "endpoint": "b"}}')
        line = self.assert_startup_error(result, "duplicate key", f"file '{path}'",
                                         "reporter 'echo_config'")
        self.assertRegex(line, r"key '[^']*endpoint'")

    def test_duplicate_key_at_any_depth_fails_startup(self):
        result, path = self.check_with(
            '{"echo_config": {"labels": {"outer": [{"x": 1, "y": 2, "x": 3}]}}}')
        line = self.assert_startup_error(result, "duplicate key", f"file '{path}'",
                                         "reporter 'echo_config'")
        self.assertRegex(line, r"key '[^']*x'")

    def test_duplicate_key_written_with_an_escape_fails_startup(self):
        result, path = self.check_with('{"echo_config": {"endpoint": "a", "\\u0065ndpoint": "b"}}')
        self.assert_startup_error(result, "duplicate key", f"file '{path}'")

    def test_same_key_in_different_objects_is_not_a_duplicate(self):
        result, _ = self.check_with({"echo_config": {"labels": {"a": {"x": 1}, "b": {"x": 2}}},
                                     "node_session": {"marker_dir": ""}},
                                    "echo_config", "node_session")
        self.assert_ok(result)

    def test_entry_for_an_output_that_is_not_selected_fails_startup(self):
        result, path = self.check_with({"echo_config": {}, "node_session": {}}, "echo_config")
        self.assert_startup_error(result, "not selected", f"file '{path}'",
                                  "reporter 'node_session'", "key 'node_session'")

    def test_entry_for_an_unknown_output_fails_startup(self):
        result, path = self.check_with({"no_such_output": {}}, "echo_config")
        self.assert_startup_error(result, f"file '{path}'", "reporter 'no_such_output'")

    def test_prometheus_entry_fails_startup(self):
        for selection in (["prometheus", "echo_config"], ["echo_config"]):
            with self.subTest(selection=selection):
                result, path = self.check_with({"prometheus": {"port": 9090}}, *selection)
                self.assert_startup_error(result, "prometheus is configured by its command-line flags",
                                          f"file '{path}'", "key 'prometheus'")

    def test_validate_rejecting_the_settings_fails_startup_with_its_message(self):
        result, path = self.check_with({"validate_rejects": {"endpoint": "http://x"}},
                                       "validate_rejects")
        self.assert_startup_error(result, "reporter 'validate_rejects'",
                                  "rejected its configuration:",
                                  "endpoint is required and must start with https://")

    def test_validate_rejects_even_without_an_entry(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "validate_rejects", *DIRS)
        self.assert_startup_error(result, "reporter 'validate_rejects'",
                                  "rejected its configuration:")

    def test_unsupported_setting_is_rejected_by_validate(self):
        result, path = self.check_with({"echo_config": {"endpoint": "x", "bogus": 1}})
        self.assert_startup_error(result, "reporter 'echo_config'", "rejected its configuration:",
                                  "unknown key 'bogus'", f"file '{path}'")

    def test_validate_returning_a_non_object_fails_startup(self):
        result, _ = self.check_with({}, "validate_returns_non_object")
        self.assert_startup_error(result, "reporter 'validate_returns_non_object'",
                                  "validate did not return a JSON object")

    def test_validate_returning_text_that_is_not_json_fails_startup(self):
        result, _ = self.check_with({}, "validate_returns_garbage")
        self.assert_startup_error(result, "reporter 'validate_returns_garbage'")

    def test_error_in_one_output_prints_no_configuration(self):
        result, _ = self.check_with({"echo_config": {}, "validate_rejects": {}},
                                    "echo_config", "validate_rejects")
        self.assertEqual(result.status, 2, result.describe())
        self.assertEqual(result.stdout, "", result.describe())


if __name__ == "__main__":
    h.main()
