"""`tokenspeed-metrics plugins [--json]`: every discovered plugin file with its
name, status, reason and the reporter names it registered."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

STATUSES = {"loaded", "disabled", "failed", "shadowed", "insecure"}


class PluginsCommand(h.CliTestCase):

    def test_json_lists_plugin_dirs_and_plugins_with_every_field(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("node_session"),
                                                     h.plugin_dir("fails_to_load")))
        self.assertEqual(set(listing),
                         {"plugin_dirs", "directories", "plugins", "plugin_files", "loaded"})
        self.assertIsInstance(listing["plugin_dirs"], list)
        self.assertEqual([d["path"] for d in listing["directories"]], listing["plugin_dirs"])
        for entry in listing["plugins"]:
            self.assertEqual(set(entry), {"name", "path", "status", "reason", "reporters", "notes"})
            self.assertIn(entry["status"], STATUSES)
            for reporter in entry["reporters"]:
                self.assertEqual(set(reporter), {"name", "version", "start_node", "override",
                                                 "overridden_by", "settings"})
                self.assertIsInstance(reporter["start_node"], bool)
                self.assertIsInstance(reporter["override"], bool)
        self.assertEqual(listing["plugin_files"], len(listing["plugins"]))
        self.assertEqual(listing["loaded"],
                         sum(1 for entry in listing["plugins"] if entry["status"] == "loaded"))

    def test_loaded_plugin_shows_name_status_and_reporters(self):
        path = h.plugin_file("node_session")
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("node_session")))
        entry = self.find_plugin(listing, path)
        self.assertEqual(entry["name"], "node_session")
        self.assertEqual(entry["status"], "loaded")
        self.assertEqual(entry["reporters"],
                         [{"name": "node_session", "version": "", "start_node": True,
                           "override": False, "overridden_by": "",
                           "settings": None}])

    def test_reporter_without_start_node_is_shown_as_such(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("echo_config")))
        entry = self.find_plugin(listing, h.plugin_file("echo_config"))
        self.assertEqual(entry["reporters"],
                         [{"name": "echo_config", "version": "", "start_node": False,
                           "override": False, "overridden_by": "",
                           "settings": None}])

    def test_override_flag_is_shown(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("override")))
        base = self.find_plugin(listing, h.plugin_file("override", "override_base"))
        replacement = self.find_plugin(listing, h.plugin_file("override", "override_replacement"))
        self.assertEqual(replacement["status"], "loaded")
        self.assertEqual(replacement["reporters"],
                         [{"name": "overridden_output", "version": "", "start_node": False,
                           "override": True, "overridden_by": "",
                           "settings": None}])
        self.assertEqual(base["status"], "loaded")
        self.assertEqual([r["override"] for r in base["reporters"]], [False])
        self.assertTrue(h.same_path(base["reporters"][0]["overridden_by"],
                                    h.plugin_file("override", "override_replacement")))

    def test_the_plugin_version_is_shown_in_text_and_json(self):
        flags = h.dirs_flags(h.plugin_dir("reports_version"))
        listing, _ = self.plugins_json(*flags)
        entry = self.find_plugin(listing, h.plugin_file("reports_version"))
        self.assertEqual(entry["reporters"][0]["version"], "2.3.1")
        result = h.run("plugins", *flags)
        self.assert_ok(result)
        self.assertIn("reporter reports_version  version: 2.3.1  start_node: no", result.stdout)

    def test_a_plugin_built_before_the_version_field_keeps_loading_without_a_version(self):
        flags = h.dirs_flags(h.plugin_dir("descriptor_without_version"))
        listing, result = self.plugins_json(*flags)
        entry = self.find_plugin(listing, h.plugin_file("descriptor_without_version"))
        self.assertEqual(entry["status"], "loaded", result.describe())
        self.assertEqual(entry["reporters"][0]["version"], "")
        self.assertEqual(self.check_lines("--enable-metrics", "--metrics-reporters",
                                          "descriptor_without_version", *flags),
                         ["descriptor_without_version: {}"])

    def test_json_carries_every_fact_of_the_text_output(self):
        missing = os.path.join(self.make_dir(), "no-such-dir")
        flags = h.dirs_flags(h.plugin_dir("override"), missing)
        listing, _ = self.plugins_json(*flags)
        text = h.run("plugins", *flags).stdout
        found = {d["path"]: d["found"] for d in listing["directories"]}
        self.assertIs(found[missing], False)
        self.assertIs(found[h.plugin_dir("override")], True)
        self.assertIn(f"  {missing} (not found)", text)
        base = self.find_plugin(listing, h.plugin_file("override", "override_base"))
        owner = base["reporters"][0]["overridden_by"]
        self.assertIn(f"(overridden by '{owner}')", text)
        self.assertIn(f"{listing['plugin_files']} plugin file(s), {listing['loaded']} loaded",
                      text)
        # The flags that use what is listed: the selection and the views' outputs.
        self.assertIn("--metrics-reporters NAME", text)
        self.assertIn("--metrics-views FILE", text)

    def test_a_plugin_directory_that_is_not_a_directory_is_named_for_what_it_is(self):
        parent = self.make_dir()
        a_file = os.path.join(parent, "file")
        with open(a_file, "w", encoding="utf-8") as out:
            out.write("not a directory\n")
        a_fifo = os.path.join(parent, "fifo")
        os.mkfifo(a_fifo)
        a_loop = os.path.join(parent, "loop")
        os.symlink(a_loop, a_loop)
        dangling = os.path.join(parent, "dangling")
        os.symlink(os.path.join(parent, "gone"), dangling)
        missing = os.path.join(parent, "missing")
        expected = {a_file: "is a file, not a directory", a_fifo: "is a FIFO, not a directory",
                    a_loop: "is a symlink loop",
                    dangling: f"is a broken symlink to '{os.path.join(parent, 'gone')}'",
                    missing: "not found"}
        flags = h.dirs_flags(*expected)
        listing, result = self.plugins_json(*flags)
        problems = {d["path"]: d["problem"] for d in listing["directories"]}
        found = {d["path"]: d["found"] for d in listing["directories"]}
        text = h.run("plugins", *flags).stdout
        for directory, problem in expected.items():
            with self.subTest(directory=directory):
                self.assertEqual(problems[directory], problem)
                self.assertIs(found[directory], False)
                self.assertIn(f"  {directory} ({problem})", text)
        # Each one but the missing directory is a mistake worth a warning line.
        for directory in (a_file, a_fifo, a_loop, dangling):
            self.assertIn(f"{h.WARNING_PREFIX}plugin directory '{directory}' "
                          f"{expected[directory]}; skipped", result.warnings)
        self.assertEqual(len(result.warnings), 4, result.describe())

    def test_a_dangling_so_symlink_is_listed_as_a_broken_symlink(self):
        directory = self.make_dir()
        target = os.path.join(directory, "removed", "jsonl.so")
        link = os.path.join(directory, "jsonl.so")
        os.symlink(target, link)
        listing, result = self.plugins_json(*h.dirs_flags(directory))
        entry = self.find_plugin(listing, link)
        self.assertEqual(entry["status"], "failed")
        self.assertEqual(entry["reason"], f"is a broken symlink to '{target}'")
        self.assert_warning(result, link, f"is a broken symlink to '{target}'")

    def test_a_so_that_is_a_fifo_or_a_directory_is_listed_without_blocking(self):
        directory = self.make_dir()
        fifo = os.path.join(directory, "fifo.so")
        os.mkfifo(fifo)
        folder = os.path.join(directory, "folder.so")
        os.mkdir(folder)
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, fifo)["reason"],
                         "is not a regular file (a FIFO)")
        self.assertEqual(self.find_plugin(listing, folder)["reason"], "is a directory")

    def test_one_plugin_lists_every_name_it_registered(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("several_names")))
        entry = self.find_plugin(listing, h.plugin_file("several_names"))
        self.assertEqual(entry["status"], "loaded")
        self.assertEqual(self.reporter_names(entry),
                         ["several_names_a", "several_names_b", "several_names_c"])

    def test_failed_plugin_shows_status_failed_and_reason(self):
        path = h.plugin_file("fails_to_load")
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("fails_to_load")))
        entry = self.find_plugin(listing, path)
        self.assertEqual(entry["name"], "fails_to_load")
        self.assertEqual(entry["status"], "failed")
        self.assertIn("cannot be loaded", entry["reason"])
        self.assertEqual(entry["reporters"], [])

    def test_plugin_name_is_file_name_without_lib_prefix_and_so(self):
        directory = self.make_dir()
        path = self.copy_plugin("echo_config", into=directory, as_name="libecho_config.so")
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        self.assertEqual(self.find_plugin(listing, path)["name"], "echo_config")

    def test_only_files_ending_in_so_are_plugins(self):
        directory = self.make_dir()
        self.copy_plugin("echo_config", into=directory)
        self.copy_plugin("several_names", into=directory, as_name="several_names.so.1")
        self.copy_plugin("node_session", into=directory, as_name="node_session.txt")
        with open(os.path.join(directory, "README"), "w", encoding="utf-8") as out:
            out.write("not a plugin\n")
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        found = [os.path.basename(e["path"]) for e in listing["plugins"]
                 if h.same_path(os.path.dirname(e["path"]), directory)]
        self.assertEqual(found, ["echo_config.so"])

    def test_plugins_of_a_directory_are_listed_in_sorted_order(self):
        directory = self.make_dir()
        # Created in an order that is neither sorted nor reverse sorted.
        names = ["m_plugin.so", "c_plugin.so", "x_plugin.so", "a_plugin.so", "q_plugin.so",
                 "b_plugin.so", "z_plugin.so", "k_plugin.so"]
        for name in names:
            self.copy_plugin("override", "override_replacement", into=directory, as_name=name)
        listing, _ = self.plugins_json(*h.dirs_flags(directory))
        found = [os.path.basename(e["path"]) for e in listing["plugins"]
                 if h.same_path(os.path.dirname(e["path"]), directory)]
        self.assertEqual(found, sorted(names))

    def test_text_output_names_each_plugin_status_and_reporter(self):
        result = h.run("plugins", *h.dirs_flags(h.plugin_dir("several_names"),
                                                h.plugin_dir("fails_to_load")))
        self.assert_ok(result)
        for text in ("several_names", "several_names_a", "several_names_b", "several_names_c",
                     "loaded", "fails_to_load", "failed", "cannot be loaded"):
            self.assertIn(text, result.stdout, result.describe())

    def test_json_output_is_only_json(self):
        listing, result = self.plugins_json(*h.dirs_flags(h.plugin_dir("echo_config")))
        self.assertTrue(result.stdout.strip().startswith("{"), result.describe())

    def test_plugins_lists_plugins_without_enable_metrics(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("echo_config")))
        self.assertEqual(self.find_plugin(listing, h.plugin_file("echo_config"))["status"],
                         "loaded")

    def test_a_described_output_shows_its_settings_copied_at_registration(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("describes_settings")))
        entry = self.find_plugin(listing, h.plugin_file("describes_settings"))
        described = entry["reporters"][0]
        self.assertEqual(described["name"], "described_output")
        # The plugin overwrote its buffer after registering: this is the host's copy.
        self.assertEqual([row["key"] for row in described["settings"]],
                         ["endpoint", "interval_ms", "mode", "token"])
        self.assertEqual(described["settings"][1],
                         {"key": "interval_ms", "type": "integer", "default": 1000, "min": 1,
                          "max": 60000, "description": "How often."})

    def test_text_output_lists_each_setting_with_type_range_choices_and_default(self):
        result = h.run("plugins", *h.dirs_flags(h.plugin_dir("describes_settings")))
        self.assert_ok(result)
        self.assertIn("  reporter described_output  start_node: no  override: no\n"
                      "    settings:\n"
                      '      endpoint  string  default: "udp://127.0.0.1:8125"\n'
                      "          Where to send.\n"
                      "      interval_ms  integer [1, 60000]  default: 1000\n"
                      "          How often.\n"
                      '      mode  choice ["fast","safe"]  default: "fast"\n'
                      "          Which way.\n"
                      "      token  string  required\n"
                      "          Required.\n", result.stdout)

    def test_a_settings_description_that_is_not_an_array_of_objects_is_shown_as_such(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("describes_settings")))
        entry = self.find_plugin(listing, h.plugin_file("describes_settings"))
        bad = [r for r in entry["reporters"] if r["name"] == "badly_described_output"]
        self.assertEqual(bad[0]["settings"], None)
        result = h.run("plugins", *h.dirs_flags(h.plugin_dir("describes_settings")))
        self.assertIn("  reporter badly_described_output  start_node: no  override: no\n"
                      "    settings: (the plugin's description is not a JSON array of objects)\n",
                      result.stdout)

    def test_a_descriptor_built_before_the_settings_field_loads_and_shows_none(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("describes_settings")))
        entry = self.find_plugin(listing, h.plugin_file("describes_settings"))
        self.assertEqual(entry["status"], "loaded")
        old = [r for r in entry["reporters"] if r["name"] == "pre_settings_output"]
        self.assertEqual(old, [{"name": "pre_settings_output", "version": "", "start_node": False,
                                "override": False, "overridden_by": "", "settings": None}])


if __name__ == "__main__":
    h.main()
