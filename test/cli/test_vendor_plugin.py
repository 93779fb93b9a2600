"""The installed tree works for an out-of-tree vendor plugin: after
`meson install --destdir`, vendor_plugin/ (plain C) and the vendor template
docs/examples/plugin/ (the kit) build with
dependency('tokenspeed-metrics-plugin') alone, the installed
tokenspeed-metrics loads both and runs the template's delivery loop, and
the template requires no symbol version beyond the build baseline
(plugins/symbol-versions.txt). One install serves all of it.

Environment (besides cli_harness's): TSM_BUILD_ROOT (this project's build
directory), TSM_MESON (the meson executable)."""
import glob
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cli_harness as h  # noqa: E402

BUILD_ROOT = os.environ["TSM_BUILD_ROOT"]
MESON = os.environ.get("TSM_MESON", "meson")
HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
VENDOR_SOURCE = os.path.join(HERE, "vendor_plugin")
TEMPLATE_SOURCE = os.path.join(SOURCE_ROOT, "docs", "examples", "plugin")
SYMBOL_CHECKER = os.path.join(SOURCE_ROOT, "test", "build_baseline", "check_symbol_versions.py")
BASELINE = os.path.join(SOURCE_ROOT, "plugins", "symbol-versions.txt")
# Hang guards only.
INSTALL_TIMEOUT_S = 300
BUILD_TIMEOUT_S = 300


def run_tool(command, env=None, timeout=BUILD_TIMEOUT_S):
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


class VendorPlugin(h.CliTestCase):

    def test_vendor_plugin_builds_against_the_installed_tree_and_loads(self):
        work = self.make_dir()
        destdir = os.path.join(work, "destdir")
        started = time.monotonic()
        install = run_tool([MESON, "install", "-C", BUILD_ROOT, "--no-rebuild", "--quiet",
                            "--destdir", destdir], timeout=INSTALL_TIMEOUT_S)
        install_seconds = time.monotonic() - started
        print(f"meson install --destdir took {install_seconds:.1f} s", file=sys.stderr)
        self.assertEqual(install.returncode, 0, install.stdout + install.stderr)

        pc_files = glob.glob(os.path.join(destdir, "**", "tokenspeed-metrics-plugin.pc"),
                             recursive=True)
        self.assertEqual(len(pc_files), 1, f"installed .pc files: {pc_files}")
        headers = glob.glob(os.path.join(destdir, "**", "tokenspeed", "metric_reporter.h"),
                            recursive=True)
        self.assertEqual(len(headers), 1, f"installed headers: {headers}")
        self.assert_core_kit_headers_need_only_the_standard_library(
            os.path.dirname(os.path.dirname(headers[0])), work)

        env = dict(os.environ)
        env["PKG_CONFIG_PATH"] = os.path.dirname(pc_files[0])
        env["PKG_CONFIG_SYSROOT_DIR"] = destdir
        env.pop("PKG_CONFIG_LIBDIR", None)
        vendor_build = os.path.join(work, "vendor-build")
        started = time.monotonic()
        setup = run_tool([MESON, "setup", vendor_build, VENDOR_SOURCE], env=env)
        self.assertEqual(setup.returncode, 0, setup.stdout + setup.stderr)
        self.assertIn(h.DEFAULT_PLUGIN_DIR, setup.stdout,
                      "the .pc file's plugindir is the host's default plugin directory\n"
                      + setup.stdout)
        compile_ = run_tool([MESON, "compile", "-C", vendor_build], env=env)
        self.assertEqual(compile_.returncode, 0, compile_.stdout + compile_.stderr)
        print(f"vendor plugin setup and build took {time.monotonic() - started:.1f} s",
              file=sys.stderr)
        plugin = os.path.join(vendor_build, "vendor_output.so")
        self.assertTrue(os.path.exists(plugin))

        # The installed executable, with its installed library.
        binaries = glob.glob(os.path.join(destdir, "**", "bin", "tokenspeed-metrics"),
                             recursive=True)
        self.assertEqual(len(binaries), 1, f"installed executables: {binaries}")
        libraries = glob.glob(os.path.join(destdir, "**", "libtokenspeed-metrics.so*"),
                              recursive=True)
        self.assertTrue(libraries, "the host library is installed")
        run_env = h.clean_environment()
        run_env["LD_LIBRARY_PATH"] = os.path.dirname(libraries[0])
        os.chmod(vendor_build, 0o755)
        check = subprocess.run([binaries[0], "check", "--enable-metrics", "--metrics-port", "0",
                                "--metrics-reporters",
                                "vendor_output,prometheus", "--metrics-plugin-dir", vendor_build],
                               env=run_env, capture_output=True, text=True,
                               timeout=h.COMMAND_TIMEOUT_S, check=False)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(check.stdout.splitlines(),
                         ["vendor_output: {}", "prometheus: built-in"])

        self.assert_template_builds_loads_and_keeps_the_baseline(env, run_env, binaries[0], work)

    def assert_template_builds_loads_and_keeps_the_baseline(self, env, run_env, binary, work):
        """docs/examples/plugin/, the vendor template on the kit, against the
        same installed tree: built, checked against the build baseline,
        validated by `check`, and run by `simulate` (its delivery loop
        reports through the host's log)."""
        http = run_tool(["pkg-config", "--print-requires", "tokenspeed-metrics-plugin-http"],
                        env=env)
        self.assertEqual(http.returncode, 0, http.stderr)
        self.assertIn("libcurl >= 7.68.0", http.stdout)
        self.assertIn("libcrypto >= 3.0", http.stdout)
        plain = run_tool(["pkg-config", "--print-requires", "tokenspeed-metrics-plugin"], env=env)
        self.assertEqual((plain.returncode, plain.stdout.strip()), (0, ""),
                         "a plugin of the C header alone needs nothing")

        template_build = os.path.join(work, "template-build")
        started = time.monotonic()
        setup = run_tool([MESON, "setup", template_build, TEMPLATE_SOURCE, "-Dwerror=true"],
                         env=env)
        self.assertEqual(setup.returncode, 0, setup.stdout + setup.stderr)
        compile_ = run_tool([MESON, "compile", "-C", template_build], env=env)
        self.assertEqual(compile_.returncode, 0, compile_.stdout + compile_.stderr)
        print(f"template setup and build took {time.monotonic() - started:.1f} s",
              file=sys.stderr)
        plugin = os.path.join(template_build, "example_output.so")
        self.assertTrue(os.path.exists(plugin))

        versions = run_tool([sys.executable, SYMBOL_CHECKER, BASELINE, plugin])
        self.assertEqual(versions.returncode, 0, versions.stdout + versions.stderr)

        os.chmod(template_build, 0o755)
        plugin_dir = self.make_dir()
        os.replace(plugin, os.path.join(plugin_dir, "example_output.so"))
        check = subprocess.run([binary, "check", "--enable-metrics", "--metrics-port", "0",
                                "--metrics-reporters", "example_output",
                                "--metrics-plugin-dir", plugin_dir],
                               env=run_env, capture_output=True, text=True,
                               timeout=h.COMMAND_TIMEOUT_S, check=False)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertEqual(check.stdout.splitlines(),
                         ['example_output: {"interval_ms":10000,"max_series":10000}'])

        config = os.path.join(work, "template.json")
        with open(config, "w") as file:
            file.write('{"example_output": {"interval_ms": 200}}')
        simulate = subprocess.run([binary, "simulate", "--ranks", "1", "--duration", "1",
                                   "--enable-metrics", "--metrics-port", "0",
                                   "--metrics-reporters", "example_output",
                                   "--metrics-reporter-config", config,
                                   "--metrics-plugin-dir", plugin_dir],
                                  env=run_env, capture_output=True, text=True,
                                  timeout=h.COMMAND_TIMEOUT_S, check=False)
        self.assertEqual(simulate.returncode, 0, simulate.stdout + simulate.stderr)
        self.assertRegex(simulate.stderr, r"plugin 'example_output': example_output: \d+ series")
        # The template reports what it sent: the host's exit summary shows it per
        # process, everything it was handed sent, nothing refused, lost or pending.
        delivered = {}
        for line in simulate.stdout.splitlines():
            fields = line.split()
            if len(fields) >= 8 and fields[2] == "example_output" and fields[1].isdigit():
                delivered[fields[0]] = int(fields[4])
        figures = dict(re.findall(r"^  (\S+) example_output: (\d+) sent, 0 refused, 0 lost, "
                                  r"\d+ retries, 0 pending$", simulate.stdout, re.MULTILINE))
        # Every process that was handed events reported (a sink starts with
        # its first event: a busy machine may leave the scheduler none).
        handed = {process for process, count in delivered.items() if count > 0}
        self.assertGreaterEqual(len(handed), 2, simulate.stdout)
        self.assertLessEqual(handed, set(figures), simulate.stdout)
        self.assertLessEqual(set(figures), set(delivered), simulate.stdout)
        for process, sent in figures.items():
            self.assertEqual(int(sent), delivered[process], simulate.stdout)

    def assert_core_kit_headers_need_only_the_standard_library(self, include_dir, work):
        """The installed kit's core headers compile as C++17 with no library
        but the standard one (gzip.hpp and http_client.hpp need zlib, libcurl)."""
        core = ["json", "settings", "aggregation", "backoff", "delivery_loop",
                "rate_limited_log"]
        for name in core + ["gzip", "http_client"]:
            self.assertTrue(os.path.exists(os.path.join(include_dir, "tokenspeed", "kit",
                                                        name + ".hpp")), name)
        source = os.path.join(work, "kit_core.cpp")
        with open(source, "w") as file:
            file.writelines(f"#include <tokenspeed/kit/{name}.hpp>\n" for name in core)
        compiled = run_tool(["c++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                             "-I" + include_dir, source])
        self.assertEqual(compiled.returncode, 0, compiled.stderr)


if __name__ == "__main__":
    h.main()
