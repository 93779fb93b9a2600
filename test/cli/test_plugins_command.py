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
        self.assertEqual(set(listing), {"plugin_dirs", "plugins"})
        self.assertIsInstance(listing["plugin_dirs"], list)
        for entry in listing["plugins"]:
            self.assertEqual(set(entry), {"name", "path", "status", "reason", "reporters", "notes"})
            self.assertIn(entry["status"], STATUSES)
            for reporter in entry["reporters"]:
                self.assertEqual(set(reporter), {"name", "start_node", "override"})
                self.assertIsInstance(reporter["start_node"], bool)
                self.assertIsInstance(reporter["override"], bool)

    def test_loaded_plugin_shows_name_status_and_reporters(self):
        path = h.plugin_file("node_session")
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("node_session")))
        entry = self.find_plugin(listing, path)
        self.assertEqual(entry["name"], "node_session")
        self.assertEqual(entry["status"], "loaded")
        self.assertEqual(entry["reporters"],
                         [{"name": "node_session", "start_node": True, "override": False}])

    def test_reporter_without_start_node_is_shown_as_such(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("echo_config")))
        entry = self.find_plugin(listing, h.plugin_file("echo_config"))
        self.assertEqual(entry["reporters"],
                         [{"name": "echo_config", "start_node": False, "override": False}])

    def test_override_flag_is_shown(self):
        listing, _ = self.plugins_json(*h.dirs_flags(h.plugin_dir("override")))
        base = self.find_plugin(listing, h.plugin_file("override", "override_base"))
        replacement = self.find_plugin(listing, h.plugin_file("override", "override_replacement"))
        self.assertEqual(replacement["status"], "loaded")
        self.assertEqual(replacement["reporters"],
                         [{"name": "overridden_output", "start_node": False, "override": True}])
        self.assertEqual(base["status"], "loaded")
        self.assertEqual([r["override"] for r in base["reporters"]], [False])

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


if __name__ == "__main__":
    h.main()
