"""Discovery and loading: directory order, sorted order, refusing insecure
plugin directories and files, TOKENSPEED_DISABLE_PLUGINS."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

OTHER_UID = 65534  # nobody


class DirectoryOrder(h.CliTestCase):

    def test_plugin_dirs_are_flags_then_environment_then_default(self):
        flag_a, flag_b, env_a, env_b = (self.make_dir() for _ in range(4))
        listing, _ = self.plugins_json(*h.dirs_flags(flag_a, flag_b),
                                       env={"TOKENSPEED_PLUGIN_PATH": f"{env_a}:{env_b}"})
        dirs = listing["plugin_dirs"]
        self.assertEqual(len(dirs), 5, dirs)
        for got, want in zip(dirs, [flag_a, flag_b, env_a, env_b]):
            self.assertTrue(h.same_path(got, want), dirs)
        self.assertEqual(dirs[4], h.DEFAULT_PLUGIN_DIR)

    def test_default_plugin_dir_is_searched_without_flags_or_environment(self):
        listing, _ = self.plugins_json()
        self.assertEqual(listing["plugin_dirs"], [h.DEFAULT_PLUGIN_DIR])

    def test_same_plugin_in_a_later_directory_is_shadowed(self):
        first, second = self.make_dir(), self.make_dir()
        kept = self.copy_plugin("echo_config", into=first)
        shadowed = self.copy_plugin("echo_config", into=second)
        listing, _ = self.plugins_json(*h.dirs_flags(first, second))
        self.assertEqual(self.find_plugin(listing, kept)["status"], "loaded")
        self.assertEqual(self.find_plugin(listing, shadowed)["status"], "shadowed")

    def test_flag_directory_comes_before_environment_directory(self):
        flag_dir, env_dir = self.make_dir(), self.make_dir()
        from_flag = self.copy_plugin("echo_config", into=flag_dir)
        from_env = self.copy_plugin("echo_config", into=env_dir)
        listing, _ = self.plugins_json(*h.dirs_flags(flag_dir),
                                       env={"TOKENSPEED_PLUGIN_PATH": env_dir})
        self.assertEqual(self.find_plugin(listing, from_flag)["status"], "loaded")
        self.assertEqual(self.find_plugin(listing, from_env)["status"], "shadowed")

    def test_environment_directories_are_searched_in_their_order(self):
        first, second = self.make_dir(), self.make_dir()
        from_first = self.copy_plugin("echo_config", into=first)
        from_second = self.copy_plugin("echo_config", into=second)
        for order, winner, loser in (((first, second), from_first, from_second),
                                     ((second, first), from_second, from_first)):
            with self.subTest(order=order):
                listing, _ = self.plugins_json(env={"TOKENSPEED_PLUGIN_PATH": ":".join(order)})
                self.assertEqual(self.find_plugin(listing, winner)["status"], "loaded")
                self.assertEqual(self.find_plugin(listing, loser)["status"], "shadowed")

    def test_override_in_a_later_directory_wins(self):
        # The later plugin (in directory order) with override takes the name.
        first, second = self.make_dir(), self.make_dir()
        self.copy_plugin("override", "override_replacement", into=first, as_name="one.so")
        self.copy_plugin("override", "override_replacement", into=second, as_name="two.so")
        for flags, winner in ((h.dirs_flags(first, second), "two.so"),
                              (h.dirs_flags(second, first), "one.so")):
            with self.subTest(winner=winner):
                lines = self.check_lines("--enable-metrics", "--metrics-reporters",
                                         "overridden_output", *flags)
                self.assertEqual(self.reporter_config(lines, "overridden_output"),
                                 {"file": winner})


class SortedOrder(h.CliTestCase):

    def test_override_is_decided_by_sorted_file_order(self):
        # override_base declares the name without override, override_replacement
        # with override. Sorted first, the replacement simply registers and the
        # base then fails ("already registered"); sorted last, it replaces.
        for base_name, replacement_name, winner in (
                ("a_base.so", "b_replacement.so", "b_replacement.so"),
                ("b_base.so", "a_replacement.so", "a_replacement.so")):
            with self.subTest(base=base_name, replacement=replacement_name):
                directory = self.make_dir()
                # Created in reverse sorted order.
                for folder, file_name, name in sorted(
                        [("override", "override_base", base_name),
                         ("override", "override_replacement", replacement_name)],
                        key=lambda item: item[2], reverse=True):
                    self.copy_plugin(folder, file_name, into=directory, as_name=name)
                result = self.check("--enable-metrics", "--metrics-reporters",
                                    "overridden_output", *h.dirs_flags(directory))
                self.assert_ok(result)
                self.assertEqual(self.reporter_config(result.stdout_lines, "overridden_output"),
                                 {"file": winner})
                if base_name.startswith("b"):
                    self.assert_warning(result, os.path.join(directory, base_name),
                                        "already registered")

    def test_last_of_many_override_plugins_in_sorted_order_wins(self):
        directory = self.make_dir()
        names = ["p.so", "d.so", "w.so", "b.so", "t.so", "h.so"]
        for name in names:
            self.copy_plugin("override", "override_replacement", into=directory, as_name=name)
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "overridden_output",
                                 *h.dirs_flags(directory))
        self.assertEqual(self.reporter_config(lines, "overridden_output"), {"file": "w.so"})


class Loading(h.CliTestCase):

    def test_plugins_are_loaded_in_isolation_so_one_cannot_supply_another_s_symbols(self):
        # a_exports.so exports tsm_vendor_runtime_init, which b_fails.so needs.
        # Loaded with RTLD_LOCAL, the earlier plugin's symbols stay private.
        directory = self.make_dir()
        self.copy_plugin("exports_symbol", into=directory, as_name="a_exports.so")
        failing = self.copy_plugin("fails_to_load", into=directory, as_name="b_fails.so")
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, os.path.join(directory, "a_exports.so"))
                         ["status"], "loaded")
        entry = self.find_plugin(listing, failing)
        self.assertEqual(entry["status"], "failed")
        self.assertIn("cannot be loaded", entry["reason"])

    def test_a_plugin_built_for_another_architecture_is_named_as_such(self):
        # A copy of a real plugin with e_machine (bytes 18-19, little-endian)
        # set to 183, AArch64: glibc would report "No such file or directory".
        directory = self.make_dir()
        path = self.copy_plugin("echo_config", into=directory)
        with open(path, "r+b") as image:
            image.seek(18)
            image.write(bytes([183, 0]))
        listing, result = self.plugins_json(*h.dirs_flags(directory))
        entry = self.find_plugin(listing, path)
        self.assertEqual(entry["status"], "failed")
        self.assertTrue(entry["reason"].startswith(
            "built for another architecture (ELF machine 183, AArch64, 64-bit; "
            "this process: machine "), entry["reason"])
        self.assertNotIn("No such file", entry["reason"])
        self.assert_warning(result, path, "built for another architecture")
        selected = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                              *h.dirs_flags(directory))
        self.assert_startup_error(selected, "reporter 'echo_config'",
                                  "built for another architecture", warnings_allowed=True)

    def test_a_so_file_that_is_not_elf_is_named_as_such(self):
        directory = self.make_dir()
        path = os.path.join(directory, "notes.so")
        with open(path, "w", encoding="utf-8") as out:
            out.write("not a library\n")
        os.chmod(path, 0o755)
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, path)["reason"],
                         "is not an ELF file (not a shared library)")

    def test_register_is_called_once_per_process(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters",
                                 "counts_register_calls",
                                 *h.dirs_flags(h.plugin_dir("counts_register_calls")))
        self.assertEqual(lines, ['counts_register_calls: {"register_calls":1}'])


class InsecurePlugins(h.CliTestCase):

    def test_plugin_file_writable_by_others_is_refused(self):
        directory = self.make_dir()
        path = self.copy_plugin("echo_config", into=directory, mode=0o757)
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(directory))
        self.assert_startup_error(result, "unknown reporter", "reporter 'echo_config'",
                                  warnings_allowed=True)
        self.assert_warning(result, path, "is writable by other users")
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, path)["status"], "insecure")

    def test_plugin_directory_writable_by_others_is_refused(self):
        directory = self.make_dir(mode=0o757)
        path = self.copy_plugin("echo_config", into=directory)
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(directory))
        self.assert_startup_error(result, "unknown reporter", "reporter 'echo_config'",
                                  warnings_allowed=True)
        self.assertTrue(any(directory in line and "is writable by other users" in line
                            for line in result.warnings), result.describe())
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        statuses = [e["status"] for e in listing["plugins"] if h.same_path(e["path"], path)]
        self.assertNotIn("loaded", statuses)

    def test_plugin_file_not_owned_by_root_or_current_user_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to give a file to another user")
        directory = self.make_dir()
        path = self.copy_plugin("echo_config", into=directory)
        os.chown(path, OTHER_UID, OTHER_UID)
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(directory))
        self.assert_startup_error(result, "unknown reporter", warnings_allowed=True)
        self.assert_warning(result, path, "is not owned by root or the current user")

    def test_plugin_directory_not_owned_by_root_or_current_user_is_refused(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to give a directory to another user")
        directory = self.make_dir()
        self.copy_plugin("echo_config", into=directory)
        os.chown(directory, OTHER_UID, OTHER_UID)
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(directory))
        self.assert_startup_error(result, "unknown reporter", warnings_allowed=True)
        self.assertTrue(any(directory in line and "is not owned by root or the current user"
                            in line for line in result.warnings), result.describe())

    def test_allow_insecure_plugins_flag_loads_them(self):
        directory = self.make_dir(mode=0o757)
        path = self.copy_plugin("echo_config", into=directory, mode=0o757)
        args = ("--enable-metrics", "--metrics-reporters", "echo_config",
                "--metrics-allow-insecure-plugins", *h.dirs_flags(directory))
        result = self.check(*args)
        self.assert_ok(result)
        self.assertEqual(self.reporter_config(result.stdout_lines, "echo_config"), {})
        listing, _ = self.plugins_json("--metrics-allow-insecure-plugins",
                                       *h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, path)["status"], "loaded")

    def test_secure_copy_is_loaded(self):
        # The counterpart of the tests above: the same copy, mode 0755, loads.
        directory = self.make_dir()
        path = self.copy_plugin("echo_config", into=directory)
        listing, result = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, path)["status"], "loaded")
        self.assert_no_warning_for(result, path)


class DisablePlugins(h.CliTestCase):

    def test_disabled_plugin_is_skipped_before_it_is_loaded(self):
        path = h.plugin_file("fails_to_load")
        env = {"TOKENSPEED_DISABLE_PLUGINS": "fails_to_load"}
        listing, result = self.plugins_json(*h.dirs_flags(h.plugin_dir("fails_to_load")), env=env)
        entry = self.find_plugin(listing, path)
        self.assertEqual(entry["status"], "disabled")
        self.assertIn("TOKENSPEED_DISABLE_PLUGINS", entry["reason"])
        self.assertNotIn("cannot be loaded", result.stderr)

    def test_disable_list_is_comma_separated(self):
        env = {"TOKENSPEED_DISABLE_PLUGINS": "fails_to_load,starts_thread"}
        listing, result = self.plugins_json(*h.dirs_flags(h.plugin_dir("fails_to_load"),
                                                          h.plugin_dir("starts_thread"),
                                                          h.plugin_dir("echo_config")), env=env)
        self.assertEqual(self.find_plugin(listing, h.plugin_file("fails_to_load"))["status"],
                         "disabled")
        self.assertEqual(self.find_plugin(listing, h.plugin_file("starts_thread"))["status"],
                         "disabled")
        self.assertEqual(self.find_plugin(listing, h.plugin_file("echo_config"))["status"],
                         "loaded")
        self.assertEqual(result.warnings, [], result.describe())

    def test_disable_uses_the_plugin_name_without_lib_prefix(self):
        directory = self.make_dir()
        path = self.copy_plugin("echo_config", into=directory, as_name="libecho_config.so")
        listing, _ = self.plugins_json(*h.dirs_flags(directory),
                                       env={"TOKENSPEED_DISABLE_PLUGINS": "echo_config"})
        self.assertEqual(self.find_plugin(listing, path)["status"], "disabled")

    def test_selected_disabled_plugin_is_an_unknown_reporter_naming_why(self):
        path = h.plugin_file("echo_config")
        result = self.check("--enable-metrics", "--metrics-reporters", "echo_config",
                            *h.dirs_flags(h.plugin_dir("echo_config")),
                            env={"TOKENSPEED_DISABLE_PLUGINS": "echo_config"})
        line = self.assert_startup_error(result, "unknown reporter", "reporter 'echo_config'",
                                         "disabled by TOKENSPEED_DISABLE_PLUGINS")
        self.assertIn(path, line)

    def test_a_disabled_name_that_matches_no_plugin_file_is_warned_about(self):
        result = self.check("--enable-metrics", *h.dirs_flags(h.plugin_dir("echo_config")),
                            env={"TOKENSPEED_DISABLE_PLUGINS": "echo_confg,no_such_plugin"})
        self.assert_ok(result)
        lines = [line for line in result.warnings if "TOKENSPEED_DISABLE_PLUGINS" in line]
        self.assertEqual(len(lines), 2, result.describe())
        self.assertIn("names 'echo_confg', but no plugin file of that name is in the plugin "
                      "directories", lines[0])
        self.assertIn("did you mean 'echo_config'?", lines[0])
        self.assertIn("names 'no_such_plugin'", lines[1])
        self.assertNotIn("did you mean", lines[1])

    def test_a_disabled_name_that_matches_a_plugin_file_is_not_warned_about(self):
        result = self.check("--enable-metrics", *h.dirs_flags(h.plugin_dir("echo_config")),
                            env={"TOKENSPEED_DISABLE_PLUGINS": "echo_config"})
        self.assert_ok(result)
        self.assertEqual(result.warnings, [], result.describe())

    def test_disabling_another_plugin_leaves_the_selection_working(self):
        lines = self.check_lines("--enable-metrics", "--metrics-reporters", "echo_config",
                                 *h.dirs_flags(h.plugin_dir("echo_config")),
                                 env={"TOKENSPEED_DISABLE_PLUGINS": "node_session"})
        self.assertEqual(lines, ["echo_config: {}"])


if __name__ == "__main__":
    h.main()
