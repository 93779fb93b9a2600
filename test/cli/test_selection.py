"""Startup selection: which outputs --enable-metrics and --metrics-reporters
select, what `check` prints, and that check creates no sink or node resource."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

GOOD_DIRS = h.dirs_flags(h.plugin_dir("echo_config"), h.plugin_dir("node_session"),
                         h.plugin_dir("several_names"))


def _run_node_session_factories(config_path):
    """Runs the simulated engine with node_session selected for half a second:
    a real start_node and create_sink, as outside check."""
    result = h.run("simulate", "--enable-metrics", "--metrics-reporters", "node_session",
                   "--metrics-reporter-config", config_path,
                   "--metrics-plugin-dir", h.plugin_dir("node_session"),
                   "--ranks", "1", "--duration", "0.5")
    assert result.status == 0, result.describe()


def plugin_warnings(result):
    """The warnings about plugin files or directories (not about flags)."""
    return [line for line in result.warnings if line.startswith(h.WARNING_PREFIX + "plugin")]


class Selection(h.CliTestCase):

    def test_enable_metrics_without_selection_selects_prometheus_only(self):
        lines = self.check_lines("--enable-metrics", *GOOD_DIRS)
        self.assertEqual(lines, ["prometheus: built-in"])

    def test_selecting_only_external_outputs_selects_no_prometheus(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "echo_config",
                                 *GOOD_DIRS)
        self.assertEqual(lines, ["echo_config: {}"])

    def test_prometheus_and_external_outputs_in_selection_order(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "prometheus",
                                 "--metrics-reporters", "echo_config", *GOOD_DIRS)
        self.assertEqual(lines, ["prometheus: built-in", "echo_config: {}"])
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "echo_config",
                                 "--metrics-reporters", "prometheus", *GOOD_DIRS)
        self.assertEqual(lines, ["echo_config: {}", "prometheus: built-in"])

    def test_reporters_flag_accepts_a_comma_separated_list(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters",
                                 "node_session,prometheus,echo_config", *GOOD_DIRS)
        self.assertEqual(lines, ["node_session: {}", "prometheus: built-in", "echo_config: {}"])

    def test_repeated_flags_and_lists_combine_in_order(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters",
                                 "several_names_b,echo_config", "--metrics-reporters",
                                 "prometheus", *GOOD_DIRS)
        self.assertEqual(lines, ['several_names_b: {"reporter":"several_names_b"}',
                                 "echo_config: {}", "prometheus: built-in"])

    def test_selecting_the_same_name_twice_selects_it_once_in_first_seen_order(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters",
                                 "echo_config,prometheus", "--metrics-reporters",
                                 "echo_config", "--metrics-reporters", "prometheus,echo_config",
                                 *GOOD_DIRS)
        self.assertEqual(lines, ["echo_config: {}", "prometheus: built-in"])

    def test_unknown_selection_fails_startup(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config,no_such_output",
                            *GOOD_DIRS)
        self.assert_startup_error(result, "unknown reporter", "reporter 'no_such_output'")
        self.assertEqual(result.stdout, "", result.describe())

    def test_unknown_reporter_lists_the_available_names_and_suggests_the_closest(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_confg", *GOOD_DIRS)
        line = self.assert_startup_error(result, "unknown reporter", "reporter 'echo_confg'")
        self.assertIn("available reporters: ", line)
        for name in ("'echo_config'", "'prometheus'"):
            self.assertIn(name, line.split("available reporters: ", 1)[1])
        self.assertTrue(line.endswith("did you mean 'echo_config'?"), line)

    def test_a_reporter_name_in_the_wrong_case_gets_the_suggestion(self):
        for wrong, right in (("ECHO_CONFIG", "echo_config"), ("Prometheus", "prometheus")):
            with self.subTest(name=wrong):
                result = self.check("--enable-metrics", "--metrics-reporters", wrong, *GOOD_DIRS)
                line = self.assert_startup_error(result, "unknown reporter", f"reporter '{wrong}'")
                self.assertTrue(line.endswith(f"did you mean '{right}'?"), line)

    def test_an_unknown_name_that_resembles_nothing_gets_no_suggestion(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "datadog", *GOOD_DIRS)
        line = self.assert_startup_error(result, "unknown reporter", "reporter 'datadog'")
        self.assertNotIn("did you mean", line)

    def test_empty_name_in_a_selection_list_fails_startup(self):
        for selection in ("echo_config,,prometheus", "echo_config,", ""):
            with self.subTest(selection=selection):
                result = self.check("--enable-metrics", "--metrics-reporters", selection,
                                    *GOOD_DIRS)
                self.assert_startup_error(result, "--metrics-reporters", "empty reporter name")

    def test_unknown_selection_fails_startup_without_any_plugin_dir(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "no_such_output")
        self.assert_startup_error(result, "unknown reporter", "reporter 'no_such_output'")

    def test_check_prints_the_normalized_configuration_not_the_input(self):
        config = self.write_config({"several_names_a": {"anything": [1, 2, 3]}})
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "several_names_a",
                                 "--metrics-reporter-config", config, *GOOD_DIRS)
        self.assertEqual(lines, ['several_names_a: {"reporter":"several_names_a"}'])


class MetricsDisabled(h.CliTestCase):

    def test_without_enable_metrics_nothing_is_selected(self):
        result = self.check(*GOOD_DIRS)
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["metrics disabled: no output selected"])

    def test_with_metrics_disabled_no_plugin_is_loaded(self):
        # Each of these plugins is warned about whenever it is loaded.
        dirs = h.dirs_flags(h.plugin_dir("fails_to_load"), h.plugin_dir("starts_thread"),
                            h.plugin_dir("unsupported_api"))
        result = self.check(*dirs)
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["metrics disabled: no output selected"])
        self.assertEqual(plugin_warnings(result), [], result.describe())
        # The same directories with metrics enabled do produce the warnings.
        enabled = self.check("--enable-metrics", *dirs)
        self.assertEqual(len(enabled.warnings), 3, enabled.describe())

    def test_with_metrics_disabled_insecure_directories_are_not_even_read(self):
        directory = self.make_dir(mode=0o757)
        self.copy_plugin("echo_config", into=directory, mode=0o757)
        result = self.check(*h.dirs_flags(directory))
        self.assert_ok(result)
        self.assertEqual(plugin_warnings(result), [], result.describe())

    def test_reporter_flag_without_enable_metrics_is_reported_as_ignored(self):
        result = self.check("--metrics-reporters", "echo_config", *GOOD_DIRS)
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["metrics disabled: no output selected"])
        self.assertIn("--metrics-reporters", result.stderr, result.describe())
        self.assertIn("ignored", result.stderr, result.describe())

    def test_reporter_config_flag_without_enable_metrics_is_reported_as_ignored(self):
        config = self.write_config({"echo_config": {}})
        result = self.check("--metrics-reporter-config", config, *GOOD_DIRS)
        self.assert_ok(result)
        self.assertIn("--metrics-reporter-config", result.stderr, result.describe())
        self.assertIn("ignored", result.stderr, result.describe())

    def test_without_reporter_flags_nothing_is_reported_as_ignored(self):
        result = self.check()
        self.assert_ok(result)
        self.assertEqual(result.stderr, "", result.describe())
        result = self.check(*GOOD_DIRS)
        self.assert_ok(result)
        self.assertNotIn("--metrics-reporters", result.stderr, result.describe())
        self.assertNotIn("--metrics-reporter-config", result.stderr, result.describe())

    def test_with_metrics_disabled_unknown_selection_is_not_an_error(self):
        result = self.check("--metrics-reporters", "no_such_output")
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["metrics disabled: no output selected"])


class CheckCreatesNothing(h.CliTestCase):
    """node_session writes a marker file from start_node and from create_sink;
    check runs the whole startup validation but must create neither."""

    def test_check_never_calls_start_node_or_create_sink(self):
        markers = self.make_dir()
        config = self.write_config({"node_session": {"marker_dir": markers}})
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "node_session",
                                 "--metrics-reporter-config", config, *GOOD_DIRS)
        self.assertEqual(lines, ["node_session: " + '{"marker_dir":"' + markers + '"}'])
        self.assertEqual(os.listdir(markers), [])

    def test_marker_plugin_leaves_markers_when_its_factories_run(self):
        markers = self.make_dir()
        config = self.write_config({"node_session": {"marker_dir": markers}})
        _run_node_session_factories(config)
        self.assertEqual(sorted(os.listdir(markers)), ["create_sink", "start_node"])

    def test_metrics_disabled_creates_nothing(self):
        markers = self.make_dir()
        config = self.write_config({"node_session": {"marker_dir": markers}})
        result = self.check("--metrics-reporters", "node_session",
                            "--metrics-reporter-config", config, *GOOD_DIRS)
        self.assert_ok(result)
        self.assertEqual(os.listdir(markers), [])


if __name__ == "__main__":
    h.main()
