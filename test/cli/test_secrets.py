"""Secrets in an output's settings: a setting the reporter's description
marks "secret": true is shown as <secret> by check, plugins and every line of
a running node, never quoted by an error, and a configuration file that holds
one and that other users can read is warned about (never an error).

The output is 'secret_output' of test/plugins/has_secret_settings: a secret
string, a secret map beside header_files, nested objects with a secret field.
Its validate and create_sink refuse a value that reads <secret>, so the
plugin is shown to receive the values as written."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

DIRS = h.dirs_flags(h.plugin_dir("has_secret_settings"))
REPORTER = "secret_output"
MARK = "<secret>"

# Every secret value of CONFIG, and the secret default of the description.
SECRETS = ["tok-7c1e9a", "hdr-52b0f4", "tenant-e83d11", "pw-a94c27", "kp-0d6b35"]
SECRET_DEFAULT = "built-in-fallback-0451"
CONFIG = {REPORTER: {
    "endpoint": "https://collector.example:4318",
    "token": SECRETS[0],
    "headers": {"api-key": SECRETS[1], "x-tenant": SECRETS[2], "x-empty": ""},
    "header_files": {"authorization": "/run/secrets/auth"},
    "basic_auth": {"username": "bob", "password": SECRETS[3], "password_file": ""},
    "tls": {"ca_file": "/etc/ssl/ca.pem", "key_password": SECRETS[4]},
}}
SECRET_KEYS = "'token', 'headers.api-key', 'headers.x-tenant', 'basic_auth.password', " \
              "'tls.key_password'"


class Secrets(h.CliTestCase):

    def config_file(self, mode, content=None):
        path = self.write_config(CONFIG if content is None else content)
        os.chmod(path, mode)
        return path

    def check_with(self, path, *extra):
        return self.check("--enable-metrics", "--metrics-reporters", REPORTER,
                          "--metrics-reporter-config", path, *DIRS, *extra)

    def assert_no_secret(self, result, *secrets):
        for secret in secrets or SECRETS + [SECRET_DEFAULT]:
            self.assertNotIn(secret, result.stdout, result.describe())
            self.assertNotIn(secret, result.stderr, result.describe())

    def secret_file_warnings(self, result):
        return [line for line in result.warnings if "holds a secret" in line
                or "hold secrets" in line]

    # ---------------------------------------------------------- check
    def test_check_shows_each_secret_value_as_secret_and_every_other_value_as_given(self):
        result = self.check_with(self.config_file(0o600))
        self.assert_ok(result)
        printed = self.reporter_config(result.stdout_lines, REPORTER)
        self.assertEqual(printed, {
            "endpoint": "https://collector.example:4318",
            "token": MARK,
            "headers": {"api-key": MARK, "x-tenant": MARK, "x-empty": ""},
            "header_files": {"authorization": "/run/secrets/auth"},
            "basic_auth": {"username": "bob", "password": MARK, "password_file": ""},
            "tls": {"ca_file": "/etc/ssl/ca.pem", "key_password": MARK},
        })
        self.assert_no_secret(result)

    def test_check_warns_once_about_a_secret_in_a_file_others_can_read_mode_0644(self):
        path = self.config_file(0o644)
        result = self.check_with(path)
        self.assert_ok(result)  # a warning, not an error
        self.assertEqual(self.secret_file_warnings(result), [
            f"{h.WARNING_PREFIX}{REPORTER}: {path}: {SECRET_KEYS} hold secrets and are readable "
            "by other users (mode 0644); restrict it (chmod 600) or use header_files, "
            "basic_auth.password_file"], result.describe())
        self.assertEqual(self.reporter_config(result.stdout_lines, REPORTER)["token"], MARK)
        self.assert_no_secret(result)

    def test_check_warns_about_a_secret_in_a_file_its_group_can_read_mode_0640(self):
        path = self.config_file(0o640, {REPORTER: {"token": SECRETS[0]}})
        result = self.check_with(path)
        self.assert_ok(result)
        self.assertEqual(self.secret_file_warnings(result), [
            f"{h.WARNING_PREFIX}{REPORTER}: {path}: 'token' holds a secret and is readable by "
            "other users (mode 0640); restrict it (chmod 600)"], result.describe())
        self.assert_no_secret(result)

    def test_check_gives_no_warning_for_a_secret_in_a_private_file_mode_0600(self):
        result = self.check_with(self.config_file(0o600))
        self.assert_ok(result)
        self.assertEqual(result.warnings, [], result.describe())
        self.assertEqual(result.stderr, "", result.describe())

    def test_check_gives_no_warning_for_a_readable_file_without_a_secret_value(self):
        path = self.config_file(0o644, {REPORTER: {
            "token": "", "headers": {}, "header_files": {"api-key": "/run/secrets/key"},
            "basic_auth": {"username": "bob", "password_file": "/run/secrets/pw"}}})
        result = self.check_with(path)
        self.assert_ok(result)
        self.assertEqual(result.warnings, [], result.describe())

    # ---------------------------------------------------------- errors
    def test_an_error_in_an_entry_holding_secrets_names_keys_never_a_secret_value(self):
        entry = dict(CONFIG[REPORTER], isolation="sandbox")
        result = self.check_with(self.config_file(0o644, {REPORTER: entry}))
        self.assert_startup_error(result, f"reporter '{REPORTER}'", "unknown isolation")
        self.assert_no_secret(result)

    def test_a_duplicate_key_inside_a_secret_map_names_the_key_never_a_secret_value(self):
        text = ('{"secret_output": {"headers": {"api-key": "%s", "api-key": "%s"}}}'
                % (SECRETS[1], SECRETS[2]))
        result = self.check_with(self.config_file(0o600, text))
        self.assert_startup_error(result, "duplicate key 'api-key'", "secret_output.headers.api-key")
        self.assert_no_secret(result)

    # ---------------------------------------------------------- plugins
    def test_plugins_marks_secret_settings_and_shows_a_secret_default_as_secret(self):
        result = h.run("plugins", *DIRS)
        self.assert_ok(result)
        lines = result.stdout_lines
        self.assertIn(f'      fallback_token  string  secret  default: "{MARK}"', lines,
                      result.describe())
        self.assertIn('      token  string  secret  default: ""', lines, result.describe())
        self.assertIn("      headers  object of strings  secret  default: {}", lines,
                      result.describe())
        self.assertIn('      basic_auth.password  string  secret  default: ""', lines,
                      result.describe())
        self.assertIn('      basic_auth.username  string  default: ""', lines, result.describe())
        self.assert_no_secret(result)

    def test_plugins_json_shows_a_secret_default_as_secret_and_keeps_the_secret_marks(self):
        listing, result = self.plugins_json(*DIRS)
        entry = self.find_plugin(listing, h.plugin_file("has_secret_settings"))
        settings = {row["key"]: row for row in entry["reporters"][0]["settings"]}
        self.assertEqual(settings["fallback_token"]["default"], MARK)
        self.assertIs(settings["fallback_token"]["secret"], True)
        self.assertEqual(settings["token"]["default"], "")
        self.assertNotIn("secret", settings["endpoint"])
        fields = {row["key"]: row for row in settings["basic_auth"]["fields"]}
        self.assertIs(fields["password"]["secret"], True)
        self.assert_no_secret(result)

    # ---------------------------------------------------------- a running node
    def test_a_node_with_secrets_prints_none_in_any_line_and_its_plugin_gets_them_as_written(self):
        path = self.config_file(0o644)
        result = h.run("simulate", "--enable-metrics", "--metrics-port", "0",
                       "--metrics-reporters", f"prometheus,{REPORTER}",
                       "--metrics-reporter-config", path, *DIRS,
                       "--ranks", "1", "--duration", "1")
        self.assert_ok(result)
        # The summary table has a row per process of the output, each "ok":
        # create_sink refuses a redacted value, so each got the values as written.
        rows = [line.split() for line in result.stdout_lines
                if len(line.split()) > 2 and line.split()[2] == REPORTER]
        self.assertEqual(len(rows), 3, result.describe())  # launcher, scheduler-0, frontend
        for row in rows:
            self.assertEqual(row[-1], "ok", result.describe())
        self.assertEqual(len(self.secret_file_warnings(result)), 1, result.describe())
        self.assert_no_secret(result)


if __name__ == "__main__":
    h.main()
