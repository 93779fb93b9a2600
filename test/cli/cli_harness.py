"""cli_harness.py — runs the built tokenspeed-metrics binary as an operator
would, for the CLI tests. Never builds anything and never touches files outside
the temporary directories it creates.

Environment (set by test/cli/meson.build):
  TSM_BINARY              the tokenspeed-metrics executable
  TSM_TEST_PLUGINS        build directory holding one folder per test plugin
  TSM_DEFAULT_PLUGIN_DIR  the default plugin directory compiled into the host
  TSM_TEST_TMPDIR         where temporary plugin directories are created
"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

# The tests' one way to wait for a condition, shared with the other folders.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from eventually import eventually  # noqa: E402,F401

BINARY = os.environ["TSM_BINARY"]
PLUGIN_ROOT = os.environ["TSM_TEST_PLUGINS"]
DEFAULT_PLUGIN_DIR = os.environ.get("TSM_DEFAULT_PLUGIN_DIR", "")
TMP_ROOT = os.environ.get("TSM_TEST_TMPDIR") or None
if TMP_ROOT:
    os.makedirs(TMP_ROOT, mode=0o755, exist_ok=True)

PREFIX = "tokenspeed-metrics: "
WARNING_PREFIX = "tokenspeed-metrics: warning: "

# A hang guard only: every command here finishes in well under a second.
COMMAND_TIMEOUT_S = 60


class Result:
    """Exit status and output of one run of the binary."""

    def __init__(self, args, completed):
        self.args = args
        self.status = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr

    @property
    def stderr_lines(self):
        return [line for line in self.stderr.splitlines() if line.strip()]

    @property
    def warnings(self):
        return [line for line in self.stderr_lines if line.startswith(WARNING_PREFIX)]

    @property
    def errors(self):
        return [line for line in self.stderr_lines if not line.startswith(WARNING_PREFIX)]

    @property
    def stdout_lines(self):
        return [line for line in self.stdout.splitlines() if line.strip()]

    def describe(self):
        return (f"command: {' '.join(self.args)}\nexit status: {self.status}\n"
                f"--- stdout\n{self.stdout}--- stderr\n{self.stderr}---")


def plugin_dir(folder):
    """The build folder of one test plugin (or group of plugins)."""
    return os.path.join(PLUGIN_ROOT, folder)


def plugin_file(folder, file_name=None):
    return os.path.join(plugin_dir(folder), (file_name or folder) + ".so")


def clean_environment(extra=None):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("TOKENSPEED_")}
    env.update(extra or {})
    return env


def run(*args, env=None):
    """Runs the binary with args (strings) and TOKENSPEED_* variables from env
    only. Returns a Result."""
    command = [BINARY] + [str(arg) for arg in args]
    completed = subprocess.run(command, env=clean_environment(env), capture_output=True,
                               text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    return Result(command, completed)


def dirs_flags(*dirs):
    flags = []
    for directory in dirs:
        flags += ["--metrics-plugin-dir", directory]
    return flags


def same_path(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


class CliTestCase(unittest.TestCase):
    """Helpers shared by the CLI tests."""

    maxDiff = None

    # ------------------------------------------------------------ files
    def make_dir(self, mode=0o755):
        """A fresh directory owned by the current user, mode 0755 by default
        (plugin directories writable by others are refused)."""
        directory = tempfile.mkdtemp(prefix="tsm-cli-", dir=TMP_ROOT)
        self.addCleanup(shutil.rmtree, directory, ignore_errors=True)
        os.chmod(directory, mode)
        return directory

    def copy_plugin(self, folder, file_name=None, into=None, as_name=None, mode=0o755):
        """Copies a built test plugin into a directory; returns the new path."""
        source = plugin_file(folder, file_name)
        into = into or self.make_dir()
        target = os.path.join(into, as_name or os.path.basename(source))
        shutil.copyfile(source, target)
        os.chmod(target, mode)
        return target

    def write_config(self, content):
        """Writes a configuration file. content is a str (written as is) or an
        object (written as JSON). Returns its path."""
        directory = self.make_dir()
        path = os.path.join(directory, "metrics.json")
        with open(path, "w", encoding="utf-8") as out:
            out.write(content if isinstance(content, str) else json.dumps(content))
        return path

    # ------------------------------------------------------------ assertions
    def assert_ok(self, result):
        self.assertEqual(result.status, 0, result.describe())

    def assert_startup_error(self, result, *fragments, warnings_allowed=False):
        """Exit status 2 and exactly one error line on stderr that begins with
        'tokenspeed-metrics: ' and contains every fragment."""
        self.assertEqual(result.status, 2, result.describe())
        lines = result.errors if warnings_allowed else result.stderr_lines
        self.assertEqual(len(lines), 1, "expected one error line\n" + result.describe())
        line = lines[0]
        self.assertTrue(line.startswith(PREFIX), result.describe())
        for fragment in fragments:
            self.assertIn(fragment, line, result.describe())
        return line

    def assert_warning(self, result, path, *fragments):
        """A line 'tokenspeed-metrics: warning: plugin '<path>': <reason>' with
        every fragment in the reason."""
        candidates = []
        for line in result.warnings:
            head = WARNING_PREFIX + "plugin '"
            if not line.startswith(head):
                continue
            quoted_end = line.find("': ", len(head))
            if quoted_end < 0 or not same_path(line[len(head):quoted_end], path):
                continue
            candidates.append(line)
            if all(fragment in line[quoted_end:] for fragment in fragments):
                return line
        self.fail(f"no warning for plugin '{path}' containing {fragments!r}; "
                  f"warnings for it: {candidates!r}\n" + result.describe())

    def assert_no_warning_for(self, result, path):
        for line in result.warnings:
            self.assertNotIn(os.path.basename(path), line, result.describe())

    # ------------------------------------------------------------ plugins --json
    def plugins_json(self, *args, env=None):
        result = run("plugins", "--json", *args, env=env)
        self.assert_ok(result)
        try:
            listing = json.loads(result.stdout)
        except ValueError as error:
            self.fail(f"plugins --json printed invalid JSON ({error})\n" + result.describe())
        return listing, result

    def find_plugin(self, listing, path):
        for entry in listing["plugins"]:
            if same_path(entry["path"], path):
                return entry
        self.fail(f"plugin '{path}' not listed: {json.dumps(listing, indent=1)}")
        return None

    def reporter_names(self, entry):
        return [reporter["name"] for reporter in entry["reporters"]]

    def check(self, *args, env=None):
        # check tries the Prometheus port: an ephemeral one, so that a test
        # never depends on the default port being free on this machine.
        if "--enable-metrics" in args and "--metrics-port" not in args:
            args = (*args, "--metrics-port", "0")
        return run("check", *args, env=env)

    def check_lines(self, *args, env=None):
        """Runs check, asserts exit 0, returns the non-empty stdout lines."""
        result = self.check(*args, env=env)
        self.assert_ok(result)
        return result.stdout_lines

    def reporter_config(self, lines, name):
        """The JSON printed by check for one output ('NAME: {...}')."""
        prefix = name + ": "
        for line in lines:
            if line.startswith(prefix):
                return json.loads(line[len(prefix):])
        self.fail(f"check printed no line for '{name}': {lines!r}")
        return None


def tmpfs_unavailable():
    """Why a small tmpfs cannot be mounted for a full-disk test, or None."""
    if os.geteuid() != 0:
        return "needs root: mounts a small tmpfs to fill it"
    if shutil.which("mount") is None:
        return "mount (util-linux) is not installed"
    return None


class SmallTmpfs:
    """A real tmpfs of size_kib KiB (mode 0700) mounted on a fresh directory,
    to fill up: a full disk without a fake. Unmounted and removed by close()."""

    def __init__(self, size_kib):
        self.path = tempfile.mkdtemp(prefix="tsm-tmpfs-", dir=TMP_ROOT)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0700",
                                  "tmpfs", self.path], capture_output=True, text=True, check=False)
        if mounted.returncode != 0:
            os.rmdir(self.path)
            raise unittest.SkipTest(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")

    def close(self):
        subprocess.run(["umount", "-l", self.path], check=False, capture_output=True)
        shutil.rmtree(self.path, ignore_errors=True)


def main():
    unittest.main(verbosity=2)
