"""Each misbehaving plugin gets a warning naming its file and the reason, its
reporter names are rolled back, other plugins are unaffected, and selecting
one of its names fails startup with an unknown-reporter error saying why. Also
the registry rules: unique names, override, reserved and invalid names,
several names per plugin, no registration after tsm_register returned."""
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

# folder, file, the reason its warning must contain
FAULTS = [
    ("fails_to_load", "fails_to_load", "cannot be loaded"),
    ("missing_register_symbol", "missing_register_symbol", "does not export tsm_register"),
    ("unsupported_api", "unsupported_api", "does not support metric reporter API version 1"),
    ("fails_after_registering", "fails_after_registering", "registration failed:"),
    ("starts_thread", "starts_thread", "started a thread during registration"),
    ("registers_prometheus", "registers_prometheus", "reserved"),
    ("invalid_reporter_name", "invalid_reporter_name", "invalid reporter name"),
]


class FaultWarnings(h.CliTestCase):

    def test_each_faulty_plugin_is_warned_about_with_its_file_and_reason(self):
        for folder, file_name, reason in FAULTS:
            with self.subTest(plugin=file_name):
                path = h.plugin_file(folder, file_name)
                result = self.check("--enable-metrics", *h.dirs_flags(h.plugin_dir(folder)))
                self.assert_ok(result)
                self.assert_warning(result, path, reason)
                self.assertEqual(len([w for w in result.warnings if file_name in w]), 1,
                                 result.describe())

    def test_each_faulty_plugin_is_listed_as_failed_with_no_reporters(self):
        for folder, file_name, reason in FAULTS:
            with self.subTest(plugin=file_name):
                path = h.plugin_file(folder, file_name)
                listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir(folder)))
                entry = self.find_plugin(listing, path)
                self.assertEqual(entry["status"], "failed")
                self.assertIn(reason, entry["reason"])
                self.assertEqual(entry["reporters"], [])

    def test_faulty_plugins_do_not_affect_other_plugins(self):
        dirs = [h.plugin_dir(folder) for folder, _, _ in FAULTS]
        dirs.append(h.plugin_dir("echo_config"))
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(*dirs))
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["echo_config: {}"])
        self.assertEqual(len(result.warnings), len(FAULTS), result.describe())

    def test_load_failure_reason_carries_the_loader_message(self):
        result = self.check("--enable-metrics", *h.dirs_flags(h.plugin_dir("fails_to_load")))
        self.assert_warning(result, h.plugin_file("fails_to_load"), "cannot be loaded",
                            "tsm_vendor_runtime_init")

    def test_registration_failure_reason_carries_the_plugin_message(self):
        result = self.check("--enable-metrics",
                            *h.dirs_flags(h.plugin_dir("fails_after_registering")))
        self.assert_warning(result, h.plugin_file("fails_after_registering"),
                            "registration failed:", "the output's runtime library is missing")


class Rollback(h.CliTestCase):
    """Names registered in a failed tsm_register call are rolled back, and a
    selected name of an unavailable plugin says why it is unavailable."""

    def assert_unknown_because(self, folder, reporter, reason):
        path = h.plugin_file(folder)
        result = self.check("--enable-metrics", "--metrics-reporters", reporter,
                            *h.dirs_flags(h.plugin_dir(folder)))
        line = self.assert_startup_error(result, "unknown reporter", f"reporter '{reporter}'",
                                         warnings_allowed=True)
        self.assertIn(path, line, result.describe())
        self.assertIn(reason, line, result.describe())

    def test_name_registered_before_register_failed_is_rolled_back(self):
        self.assert_unknown_because("fails_after_registering", "rolled_back_output",
                                    "registration failed:")

    def test_name_registered_by_a_plugin_that_started_a_thread_is_rolled_back(self):
        self.assert_unknown_because("starts_thread", "threaded_output",
                                    "started a thread during registration")

    def test_rolled_back_name_is_free_for_a_later_plugin(self):
        # A later plugin declares the rolled back name without override: it
        # must succeed, and the name must belong to it.
        directory = self.make_dir()
        failing = self.copy_plugin("fails_after_registering", into=directory,
                                   as_name="a_failing.so")
        later = self.copy_plugin("reuses_rolled_back_name", into=directory,
                                 as_name="b_later.so")
        result = self.check("--enable-metrics", "--metrics-reporters", "rolled_back_output",
                            *h.dirs_flags(directory))
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["rolled_back_output: {}"])
        self.assert_warning(result, failing, "registration failed:")
        self.assert_no_warning_for(result, later)
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.reporter_names(self.find_plugin(listing, later)),
                         ["rolled_back_output"])
        self.assertEqual(self.find_plugin(listing, failing)["reporters"], [])


class Registry(h.CliTestCase):

    def test_same_name_without_override_keeps_the_first_and_warns_about_the_second(self):
        directory = h.plugin_dir("duplicate_name")
        result = self.check("--enable-metrics", "--metrics-reporters", "duplicated_output",
                            *h.dirs_flags(directory))
        self.assert_ok(result)
        self.assertEqual(self.reporter_config(result.stdout_lines, "duplicated_output"),
                         {"file": "duplicate_name_a.so"})
        self.assert_warning(result, h.plugin_file("duplicate_name", "duplicate_name_b"),
                            "already registered", "duplicated_output")
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(
            listing, h.plugin_file("duplicate_name", "duplicate_name_a"))["status"], "loaded")
        second = self.find_plugin(listing, h.plugin_file("duplicate_name", "duplicate_name_b"))
        self.assertEqual(second["status"], "failed")
        self.assertEqual(second["reporters"], [])

    def test_override_replaces_the_name_and_the_later_plugin_wins(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "overridden_output",
                            *h.dirs_flags(h.plugin_dir("override")))
        self.assert_ok(result)
        self.assertEqual(result.warnings, [], result.describe())
        self.assertEqual(self.reporter_config(result.stdout_lines, "overridden_output"),
                         {"file": "override_replacement.so"})

    def test_prometheus_is_reserved_for_the_built_in_output(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "prometheus",
                            *h.dirs_flags(h.plugin_dir("registers_prometheus")))
        self.assert_ok(result)
        self.assertEqual(result.stdout_lines, ["prometheus: built-in"])
        self.assert_warning(result, h.plugin_file("registers_prometheus"), "reserved",
                            "prometheus")

    def test_invalid_reporter_name_is_rejected(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(h.plugin_dir("invalid_reporter_name"),
                                          h.plugin_dir("echo_config")))
        self.assert_ok(result)
        self.assert_warning(result, h.plugin_file("invalid_reporter_name"),
                            "invalid reporter name")

    def test_reporter_names_are_1_to_64_characters_of_lowercase_digits_and_dot_dash_underscore(self):
        # file_named_reporter declares its own file name (without .so).
        valid = ["ok.name-1_x", "a", "0", "x.-_9", "n" * 64]
        invalid = ["UPPER", "has space", "n" * 65, "caf\u00e9", "semi;colon", "slash\\x"]
        directory = self.make_dir()
        for name in valid + invalid:
            self.copy_plugin("file_named_reporter", into=directory, as_name=name + ".so")
        listing, result = self.plugins_json(*h.dirs_flags(directory))
        for name in valid:
            with self.subTest(valid=name):
                entry = self.find_plugin(listing, os.path.join(directory, name + ".so"))
                self.assertEqual(entry["status"], "loaded", entry)
                self.assertEqual(self.reporter_names(entry), [name])
        for name in invalid:
            with self.subTest(invalid=name):
                path = os.path.join(directory, name + ".so")
                entry = self.find_plugin(listing, path)
                self.assertEqual(entry["status"], "failed", entry)
                self.assertIn("invalid reporter name", entry["reason"])
                self.assert_warning(result, path, "invalid reporter name")

    def test_one_plugin_may_register_several_names(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters",
                                 "several_names_c,several_names_a",
                                 *h.dirs_flags(h.plugin_dir("several_names")))
        self.assertEqual(lines, ['several_names_c: {"reporter":"several_names_c"}',
                                 'several_names_a: {"reporter":"several_names_a"}'])

    def test_registration_after_register_returned_is_rejected(self):
        result = self.check("--enable-metrics", "--metrics-reporters", "registers_late",
                            *h.dirs_flags(h.plugin_dir("registers_late")))
        self.assert_ok(result)
        self.assertEqual(self.reporter_config(result.stdout_lines, "registers_late"),
                         {"late_registration": "rejected"})
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("registers_late")))
        self.assertEqual(self.reporter_names(self.find_plugin(listing,
                                                              h.plugin_file("registers_late"))),
                         ["registers_late"])

    def test_late_registered_name_cannot_be_selected(self):
        result = self.check("--enable-metrics", "--metrics-reporters",
                            "registers_late,late_output",
                            *h.dirs_flags(h.plugin_dir("registers_late")))
        self.assert_startup_error(result, "unknown reporter", "reporter 'late_output'")


class CrossCompiler(h.CliTestCase):

    @unittest.skipUnless(os.path.exists(h.plugin_file("c_abi_clang")),
                         "clang is not installed: the clang-built plugin was not built")
    def test_plain_c_plugin_built_by_clang_loads_into_the_host(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("c_abi_clang")))
        entry = self.find_plugin(listing, h.plugin_file("c_abi_clang"))
        self.assertEqual(entry["status"], "loaded")
        self.assertEqual(entry["reporters"],
                         [{"name": "c_abi_clang", "version": "", "start_node": False,
                           "override": False, "overridden_by": "",
                           "settings": None}])
        config = self.write_config({"c_abi_clang": {"endpoint": "udp://127.0.0.1:8125"}})
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "c_abi_clang",
                                 "--metrics-reporter-config", config,
                                 *h.dirs_flags(h.plugin_dir("c_abi_clang")))
        self.assertEqual(self.reporter_config(lines, "c_abi_clang"),
                         {"compiled_by": "clang",
                          "settings": {"endpoint": "udp://127.0.0.1:8125"}})


if __name__ == "__main__":
    h.main()
