"""The CLI: --help on every command, unknown flags and commands are errors."""
import os
import re
import socket
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

COMMANDS = ["plugins", "check"]
OPERATORS_DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "operators.md")


class HelpAndUnknownFlags(h.CliTestCase):

    def test_top_level_help_lists_every_command(self):
        for args in (["--help"], ["help"]):
            result = h.run(*args)
            self.assert_ok(result)
            for command in COMMANDS:
                self.assertIn(command, result.stdout, result.describe())

    def test_every_command_has_help_that_exits_0(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                result = h.run(command, "--help")
                self.assert_ok(result)
                self.assertIn(command, result.stdout, result.describe())
                self.assertIn("--", result.stdout, "help lists the options\n" + result.describe())

    def test_check_help_lists_the_metrics_flags(self):
        result = h.run("check", "--help")
        self.assert_ok(result)
        for flag in ("--enable-metrics", "--metrics-reporters", "--metrics-reporter-config",
                     "--metrics-plugin-dir", "--metrics-allow-insecure-plugins"):
            self.assertIn(flag, result.stdout, result.describe())

    def test_the_docs_flag_tables_are_the_ones_the_table_of_flags_renders(self):
        result = h.run("flags", "--markdown")
        self.assert_ok(result)
        tables = result.stdout.strip("\n").split("\n\n")
        self.assertEqual(len(tables), 2, result.describe())
        with open(OPERATORS_DOC, encoding="utf-8") as doc:
            text = doc.read()
        for table in tables:
            self.assertIn(table + "\n", text,
                          "docs/operators.md differs from `tokenspeed-metrics flags --markdown`:\n"
                          + table)

    def test_flags_prints_every_flag_that_check_accepts(self):
        self.assertIn("flags", h.run("--help").stdout)
        self.assert_ok(h.run("flags", "--help"))
        result = h.run("flags")
        self.assert_ok(result)
        check_help = h.run("check", "--help").stdout
        flags = re.findall(r"^  (--[a-z-]+)", result.stdout, re.MULTILINE)
        self.assertEqual(len(flags), 14, result.describe())
        for flag in flags:
            self.assertIn(flag, check_help)

    def test_check_accepts_every_metrics_flag_of_simulate(self):
        result = h.run("check", "--enable-metrics", "--metrics-host", "127.0.0.1",
                       "--metrics-port", "0", "--metrics-multiproc-dir",
                       os.path.join(self.make_dir(), "base"),
                       "--metrics-reporter-queue-size", "64", "--metrics-shutdown-timeout", "2")
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["prometheus: built-in"])
        help_text = h.run("check", "--help").stdout
        for flag in ("--metrics-host", "--metrics-port", "--metrics-multiproc-dir"):
            self.assertIn(flag, help_text)

    def test_check_reports_a_port_already_in_use_as_startup_would(self):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen(1)
            port = busy.getsockname()[1]
            result = h.run("check", "--enable-metrics", "--metrics-port", port)
            self.assert_startup_error(result, "reporter 'prometheus'", "key '--metrics-port'",
                                      f"cannot listen on 127.0.0.1:{port}",
                                      "Address already in use")
            # Without Prometheus selected no endpoint would start: no error.
            self.assert_ok(h.run("check", "--enable-metrics", "--metrics-port", port,
                                 "--metrics-reporters", "echo_config",
                                 *h.dirs_flags(h.plugin_dir("echo_config"))))

    def test_check_reports_a_multiproc_dir_that_is_not_a_directory(self):
        path = os.path.join(self.make_dir(), "a-file")
        with open(path, "w", encoding="utf-8") as out:
            out.write("x")
        result = h.run("check", "--enable-metrics", "--metrics-port", "0",
                       "--metrics-multiproc-dir", path)
        self.assert_startup_error(result, "key '--metrics-multiproc-dir'", "not a directory")

    def test_plugins_help_lists_json_flag(self):
        result = h.run("plugins", "--help")
        self.assert_ok(result)
        self.assertIn("--json", result.stdout, result.describe())

    def test_help_does_not_load_plugins(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                result = h.run(command, "--help",
                               *h.dirs_flags(h.plugin_dir("fails_to_load")))
                self.assert_ok(result)
                self.assertEqual(result.warnings, [], result.describe())

    def test_unknown_flag_is_an_error_on_every_command(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                result = h.run(command, "--no-such-flag")
                self.assert_startup_error(result, "--no-such-flag")

    def test_abbreviated_flag_is_an_unknown_flag(self):
        for flag in ("--enable", "--metrics-reporter", "--metrics-plugin"):
            with self.subTest(flag=flag):
                result = h.run("check", flag, "echo_config")
                self.assert_startup_error(result, flag)

    def test_unexpected_positional_argument_is_an_error(self):
        for command in COMMANDS:
            with self.subTest(command=command):
                result = h.run(command, "stray-argument")
                self.assertEqual(result.status, 2, result.describe())
                self.assertEqual(len(result.stderr_lines), 1, result.describe())
                self.assertTrue(result.stderr_lines[0].startswith(h.PREFIX), result.describe())

    def test_flag_missing_its_value_is_an_error(self):
        for flag in ("--metrics-reporters", "--metrics-reporter-config", "--metrics-plugin-dir"):
            with self.subTest(flag=flag):
                result = h.run("check", "--enable-metrics", flag)
                self.assert_startup_error(result, flag)

    def test_version_prints_the_host_and_api_versions(self):
        result = h.run("--version")
        self.assert_ok(result)
        self.assertRegex(result.stdout,
                         r"^tokenspeed-metrics [0-9]+\.[0-9]+\.[0-9]+ \(metric reporter API "
                         r"version 1\)\n$")

    def test_output_that_cannot_be_written_is_an_error_not_exit_0(self):
        # /dev/full: every write fails with ENOSPC, as on a full disk.
        for args in (["--version"], ["--help"], ["flags"], ["plugins", "--help"]):
            with self.subTest(args=args):
                with open("/dev/full", "w") as full:
                    result = subprocess.run([h.BINARY, *args], stdout=full, stderr=subprocess.PIPE,
                                            text=True, timeout=60, check=False)
                self.assertNotEqual(result.returncode, 0)
                self.assertIn("cannot write the output to stdout", result.stderr)
                self.assertIn("No space left on device", result.stderr)

    def test_producer_help_prints_help_instead_of_an_error(self):
        result = h.run("producer", "--help")
        self.assert_ok(result)
        self.assertIn("usage: tokenspeed-metrics producer", result.stdout)
        self.assertIn("--role", result.stdout)
        self.assertEqual(result.stderr, "", result.describe())

    def test_producer_without_role_is_a_usage_error(self):
        result = h.run("producer")
        self.assert_startup_error(result, "--role")

    def test_unknown_command_is_an_error(self):
        result = h.run("no-such-command")
        self.assert_startup_error(result, "no-such-command")

    def test_no_command_is_a_usage_error(self):
        result = h.run()
        self.assertEqual(result.status, 2, result.describe())


class SecondsFlagRanges(h.CliTestCase):
    """Every flag given in seconds (or milliseconds) refuses a value that is
    not a finite number in its range before anything starts: exit 2, one line
    naming the flag. Beyond about 292 years a conversion to the clock's
    nanoseconds overflows, and inf would end a wait at once."""

    OUT_OF_RANGE = ("inf", "-inf", "nan", "1e10", "1e300", "-1", "31536001")

    def assert_refused(self, flag, value, *other_flags):
        # --duration 0.01: were the value taken, the run would end by itself.
        result = h.run("simulate", "--duration", "0.01", *other_flags, flag, value)
        return self.assert_startup_error(result, flag)

    def test_linger_outside_0_to_a_year_is_a_startup_error_naming_it(self):
        for value in self.OUT_OF_RANGE:
            with self.subTest(value=value):
                line = self.assert_refused("--linger", value)
                self.assertNotIn("serving /metrics", line)

    def test_duration_outside_0_to_a_year_is_a_startup_error_naming_it(self):
        for value in self.OUT_OF_RANGE:
            with self.subTest(value=value):
                result = h.run("simulate", "--duration", value)
                self.assert_startup_error(result, "--duration")

    def test_metrics_shutdown_timeout_and_iteration_ms_refuse_non_finite_values(self):
        for flag in ("--metrics-shutdown-timeout", "--iteration-ms"):
            for value in ("inf", "nan", "1e10"):
                with self.subTest(flag=flag, value=value):
                    self.assert_refused(flag, value)
        for value in ("inf", "nan", "1e10"):
            with self.subTest(command="check", value=value):
                result = h.run("check", "--enable-metrics", "--metrics-reporters", "prometheus",
                               "--metrics-shutdown-timeout", value)
                self.assert_startup_error(result, "--metrics-shutdown-timeout")


if __name__ == "__main__":
    h.main()
