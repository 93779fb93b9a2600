"""test_package.py — `pip install .` proven in a fresh virtual environment of
one interpreter (argv: NAME PYTHON): offline, with Debian's meson-python as
the backend, by the install line of README.md, docs/python.md and
docs/packaging.md (checked to be one line, and run as written); then, in the environment's own interpreter, the package's
import, start() with prometheus + jsonl + the specification's example Python
plugin package, spawned producers, the scrape, the jsonl and example files, the
tokenspeed-metrics console script, and that every file of ours (the
extension, the host library, the helper, the plugins) is the package's.

Run by Debian's python3 (meson test, suite python-package). The meson build
of the package persists per interpreter under TSM_PACKAGE_BUILD_ROOT (with
ccache, a repeat costs little); the virtual environment is made again each
run. `--bench` afterwards runs test/bench/python_bench.py in the environment
(prometheus_client taken from Debian's dist-packages).

Environment: TSM_SOURCE_ROOT (the tree pip installs), TSM_PACKAGE_BUILD_ROOT.
"""
import glob
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time

from prometheus_client.parser import text_string_to_metric_families

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.environ["TSM_SOURCE_ROOT"]
BUILD_ROOT = os.environ["TSM_PACKAGE_BUILD_ROOT"]
DIST_PACKAGES = "/usr/lib/python3/dist-packages"  # Debian's: prometheus_client for --bench
INSTALL_LINE_START = "B=$(mktemp -d) &&"  # the documented offline install line
EXAMPLE = os.path.join(SOURCE, "test", "python_plugins", "packages", "example_metrics")
PIP_TIMEOUT_S = 1500  # a cold build of the whole tree on two busy cores
RUN_TIMEOUT_S = 180  # hang guard only
SHIPPED_PLUGINS = ("jsonl", "otlp", "python", "remote_write", "statsd", "zmq_load")


def step(title):
    print(f"== {title}", flush=True)
    return time.monotonic()


def done(started):
    print(f"   {time.monotonic() - started:.1f} s", flush=True)


def run(args, env=None, timeout=RUN_TIMEOUT_S, check=True, cwd=None):
    result = subprocess.run(args, capture_output=True, text=True, env=env, timeout=timeout,
                            cwd=cwd, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{args} exited with {result.returncode}:\n"
                             f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return result


def documented_install_line():
    """The offline install line, the same in README.md, docs/python.md and
    docs/packaging.md (the line that starts with INSTALL_LINE_START): what
    this test runs."""
    found = {}
    for doc in ("README.md", os.path.join("docs", "python.md"), os.path.join("docs", "packaging.md")):
        with open(os.path.join(SOURCE, doc), encoding="utf-8") as text:
            lines = [line.strip() for line in text if line.strip().startswith(INSTALL_LINE_START)]
        assert len(lines) == 1, f"{doc}: {len(lines)} install lines starting {INSTALL_LINE_START!r}"
        found[doc] = lines[0]
    assert len(set(found.values())) == 1, f"the install lines differ: {found}"
    line = found["README.md"]
    assert "pip install -v --no-build-isolation --no-index ." in line, line
    return line


def venv_environment(venv, extra=None):
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TOKENSPEED_", "PYTHON", "VIRTUAL_ENV", "LD_LIBRARY_PATH"))}
    env["VIRTUAL_ENV"] = venv
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env


def example_wheel(folder):
    """The example plugin package as a wheel, built once by Debian's
    python3 (setuptools) from a copy: pure Python, any venv installs it
    offline without setuptools of its own."""
    wheels = glob.glob(os.path.join(folder, "example_metrics-*.whl"))
    if wheels:
        return wheels[0]
    copy = os.path.join(folder, "src")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(EXAMPLE, copy)
    run(["/usr/bin/python3", "-m", "pip", "wheel", "--quiet", "--no-index", "--no-build-isolation",
         "--no-deps", "--disable-pip-version-check", "-w", folder, copy], timeout=300)
    shutil.rmtree(copy)
    return glob.glob(os.path.join(folder, "example_metrics-*.whl"))[0]


def runpath(path):
    out = run(["readelf", "-d", path]).stdout
    for line in out.splitlines():
        if "(RUNPATH)" in line or "(RPATH)" in line:
            return line.split("[", 1)[1].rstrip("]").split(":")
    return []


def ldd(path, env):
    resolved = {}
    for line in run(["ldd", path], env=env).stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "=>":
            resolved[parts[0]] = parts[2]
    return resolved


def check_files(site, python_libdir, env):
    """The package's layout, its RUNPATHs and what the loader resolves."""
    package = os.path.join(site, "tokenspeed_metrics")
    expected = [os.path.join(package, "lib", "libtokenspeed-metrics.so"),
                os.path.join(package, "lib", "tokenspeed-metrics-sink-helper"),
                os.path.join(package, "bin", "tokenspeed-metrics"),
                os.path.join(package, "plugins", "python", "_tokenspeed_metrics_bridge.py"),
                os.path.join(package, "_cli.py")]
    expected += [os.path.join(package, "plugins", name + ".so") for name in SHIPPED_PLUGINS]
    extensions = glob.glob(os.path.join(site, "_tokenspeed_metrics.*.so"))
    assert len(extensions) == 1, extensions
    expected += extensions
    for path in expected:
        assert os.path.isfile(path), f"missing {path}"
    links = [os.path.join(root, name) for root, dirs, names in os.walk(package)
             for name in names + dirs if os.path.islink(os.path.join(root, name))]
    assert not links, links
    elves = [path for path in expected if not path.endswith(".py")]
    for path in elves:
        for entry in runpath(path):
            if entry.startswith("$ORIGIN"):
                target = os.path.realpath(entry.replace("$ORIGIN", os.path.dirname(path)))
                assert target.startswith(os.path.realpath(os.path.dirname(site))), (path, entry)
            else:  # only the python bridge's libpython, the interpreter's own
                assert os.path.basename(path) == "python.so" and entry == python_libdir, \
                    (path, entry)
    library = os.path.realpath(os.path.join(package, "lib", "libtokenspeed-metrics.so"))
    for path in (extensions[0], os.path.join(package, "bin", "tokenspeed-metrics")):
        found = ldd(path, env).get("libtokenspeed-metrics.so")
        assert found and os.path.realpath(found) == library, (path, found)
    if python_libdir:
        found = ldd(os.path.join(package, "plugins", "python.so"), env)
        libpython = [value for key, value in found.items() if key.startswith("libpython3")]
        assert libpython and os.path.dirname(os.path.realpath(libpython[0])) == \
            os.path.realpath(python_libdir), found
    print(f"   {len(expected)} files in place; ldd {os.path.basename(extensions[0])}: "
          f"libtokenspeed-metrics.so => {os.path.relpath(library, site)} (site-packages)")


def samples(text, prefix):
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith(prefix) and "le" not in sample.labels:
                found[(sample.name, sample.labels.get("producer"))] = sample.value
    return found


def event_totals(paths):
    totals = {}
    for path in paths:
        with open(path) as lines:
            for line in lines:
                event = json.loads(line)
                key = (event["metric"], event["labels"]["producer"])
                count, total = totals.get(key, (0, 0.0))
                totals[key] = (count + event["weight"], total + event["value"] * event["weight"])
    return totals


def check_engine(venv, work, env):
    out = os.path.join(work, "engine")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "run"))
    config = os.path.join(out, "metrics.json")
    with open(config, "w") as file:
        json.dump({"jsonl": {"path": os.path.join(out, "events-{pid}.jsonl")},
                   "example_output": {"endpoint": "file://" + os.path.join(out, "example-{pid}.jsonl")}},
                  file)
    result = run([os.path.join(venv, "bin", "python"), os.path.join(HERE, "engine.py"), config,
                  os.path.join(out, "run")], env=env, cwd=out)
    scrape = samples(result.stdout, "pkg:")
    for producer in (0, 1):
        assert scrape[("pkg:requests_total", str(producer))] == 250 * (producer + 1), scrape
        assert scrape[("pkg:latency_seconds_count", str(producer))] == 500, scrape
        assert math.isclose(scrape[("pkg:latency_seconds_sum", str(producer))], 500 * 0.02), scrape
        assert scrape[("pkg:spread_seconds_count", str(producer))] == 250, scrape
        assert scrape[("pkg:spread_seconds_sum", str(producer))] == 125, scrape
    # Sinks are created lazily: only the two producers recorded.
    for pattern in ("events-*.jsonl", "example-*.jsonl"):
        files = glob.glob(os.path.join(out, pattern))
        assert len(files) == 2, (pattern, files, result.stderr)
        totals = event_totals(files)
        for producer in ("0", "1"):
            assert totals[("pkg:requests_total", producer)][1] == \
                scrape[("pkg:requests_total", producer)], (pattern, totals)
            count, total = totals[("pkg:latency_seconds", producer)]
            assert count == scrape[("pkg:latency_seconds_count", producer)], (pattern, totals)
            assert math.isclose(total, scrape[("pkg:latency_seconds_sum", producer)])
    assert "SpawnProcess" in result.stderr, result.stderr  # the summary names the producers
    print("   scrape, jsonl and example_output agree for both spawned producers")


def check_console_script(venv, site, work, env):
    script = os.path.join(venv, "bin", "tokenspeed-metrics")
    version = run([script, "--version"], env=env)
    assert "0." in version.stdout + version.stderr, version
    binary = os.path.join(site, "tokenspeed_metrics", "bin", "tokenspeed-metrics")
    bad_script = run([script, "--no-such-flag"], env=env, check=False)
    bad_binary = run([binary, "--no-such-flag"], env=env, check=False)
    assert bad_script.returncode == bad_binary.returncode != 0, (bad_script, bad_binary)
    # The default plugin directory is the package's; the bridge, embedding
    # this interpreter in the executable, finds the venv's example package.
    listing = json.loads(run([script, "plugins", "--json"], env=env).stdout)
    plugins_dir = os.path.realpath(os.path.join(site, "tokenspeed_metrics", "plugins"))
    dirs = [os.path.realpath(entry["path"]) for entry in listing["directories"] if entry["found"]]
    assert dirs == [plugins_dir], listing["directories"]
    loaded = {plugin["name"]: plugin for plugin in listing["plugins"]}
    for name in SHIPPED_PLUGINS:
        assert loaded[name]["status"] == "loaded", loaded[name]
        assert os.path.realpath(loaded[name]["path"]).startswith(plugins_dir + os.sep)
    reporters = [reporter["name"] for reporter in loaded["python"]["reporters"]]
    assert "example_output" in reporters, loaded["python"]
    # simulate through the console script: the embedded interpreter runs the example.
    out = os.path.join(work, "simulate")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    config = os.path.join(out, "metrics.json")
    with open(config, "w") as file:
        json.dump({"example_output": {"endpoint": "file://" + os.path.join(out, "sim-{pid}.jsonl")}},
                  file)
    run([script, "simulate", "--enable-metrics", "--metrics-port", "0",
         "--metrics-reporters", "prometheus,example_output", "--metrics-reporter-config", config,
         "--ranks", "1", "--duration", "2"], env=env, cwd=out)
    events = sum(1 for path in glob.glob(os.path.join(out, "sim-*.jsonl")) for _ in open(path))
    assert events > 0, os.listdir(out)
    print(f"   console script: --version, exit status, plugins in {plugins_dir}, "
          f"simulate with the example ({events} events)")


def main():
    name, python = sys.argv[1:3]
    bench = "--bench" in sys.argv[3:]
    work = os.path.join(BUILD_ROOT, name)
    venv = os.path.join(work, "venv")
    builddir = os.path.join(work, "meson")
    os.makedirs(work, exist_ok=True)
    print(f"{name}: {python} "
          f"({run([python, '-c', 'import platform; print(platform.python_version())']).stdout.strip()})")

    started = step("a fresh virtual environment")
    shutil.rmtree(venv, ignore_errors=True)
    run([python, "-m", "venv", venv], timeout=300)
    vpython = os.path.join(venv, "bin", "python")
    done(started)

    line = documented_install_line()
    started = step(f"the documented install line, in {SOURCE}: {line}")
    settings = ["--disable-pip-version-check", "--config-settings", f"builddir={builddir}",
                "--config-settings", "compile-args=-j2"]
    if os.path.exists(os.path.join(builddir, "meson-private", "coredata.dat")):
        # meson-python reconfigures a given build folder only while its
        # native file (in the source tree, shared by every interpreter) is
        # unchanged; this one was configured for this interpreter.
        settings += ["--config-settings", "setup-args=--reconfigure"]
    # The line runs as written, in the environment (its pip first on PATH);
    # pip is given this test's build folder (kept per interpreter, for
    # ccache and repeat runs) and two jobs after the line's own arguments.
    wrapper = "pip() { command pip \"$@\" %s; }; " % " ".join(shlex.quote(a) for a in settings)
    env = venv_environment(venv, {"CCACHE_NOHASHDIR": "1", "TMPDIR": work})
    result = run(["bash", "-c", wrapper + line], env=env, timeout=PIP_TIMEOUT_S, cwd=SOURCE)
    for folder in glob.glob(os.path.join(work, "tmp.*")):  # the line's mktemp -d
        shutil.rmtree(folder)
    steps = [line for line in (result.stdout + result.stderr).splitlines()
             if line.lstrip().startswith("[") and "/" in line.split("]")[0]]
    print(f"   {len(steps)} build steps; " + (steps[-1].strip() if steps else "nothing to build"))
    done(started)

    env = venv_environment(venv)
    site = run([vpython, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
               env=env).stdout.strip()
    python_libdir = run([vpython, "-c", "import sysconfig; v = sysconfig.get_config_var; "
                         "print(v('LIBDIR') if v('Py_ENABLE_SHARED') else '')"], env=env).stdout.strip()
    if python_libdir.startswith(("/usr/lib", "/lib")):
        python_libdir = ""  # the loader's default path: no RUNPATH needed

    started = step("the example plugin package (a wheel, pip install --no-index)")
    wheel = example_wheel(os.path.join(BUILD_ROOT, "wheels"))
    run([vpython, "-m", "pip", "install", "--quiet", "--no-index", "--disable-pip-version-check",
         wheel], env=env, timeout=300)
    done(started)

    started = step("the installed files")
    check_files(site, python_libdir, env)
    done(started)

    started = step("an engine: start(), spawned producers, the scrape, jsonl, example_output")
    check_engine(venv, work, env)
    done(started)

    started = step("the tokenspeed-metrics console script")
    check_console_script(venv, site, work, env)
    done(started)

    if bench:
        started = step("test/bench/python_bench.py in this environment")
        shim = os.path.join(work, "bench-path")
        shutil.rmtree(shim, ignore_errors=True)
        os.makedirs(shim)
        for module in ("prometheus_client", "decorator.py"):  # Debian's needs decorator
            os.symlink(os.path.join(DIST_PACKAGES, module), os.path.join(shim, module))
        bench_env = venv_environment(venv, {
            "PYTHONPATH": shim,
            "TSM_JSONL_PLUGIN_DIR": os.path.join(site, "tokenspeed_metrics", "plugins")})
        print(run([vpython, os.path.join(SOURCE, "test", "bench", "python_bench.py")],
                  env=bench_env, timeout=900).stdout)
        done(started)
    print(f"{name}: the package works in a fresh virtual environment")


if __name__ == "__main__":
    main()
