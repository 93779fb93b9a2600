"""The CLI: --help on every command, unknown flags and commands are errors."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

COMMANDS = ["plugins", "check"]


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

    def test_unknown_command_is_an_error(self):
        result = h.run("no-such-command")
        self.assert_startup_error(result, "no-such-command")

    def test_no_command_is_a_usage_error(self):
        result = h.run()
        self.assertEqual(result.status, 2, result.describe())


if __name__ == "__main__":
    h.main()
