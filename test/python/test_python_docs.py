"""docs/python.md works as written: its quick start, pasted into a file and
run, prints a non-empty exposition with both processes' series and the
lines the page shows; the install line is one line in README.md,
docs/python.md and docs/packaging.md (the python-package suite runs it).

The zero-line adoption cases (imports swapped, no start(): with
PROMETHEUS_MULTIPROC_DIR, prometheus_client's multiprocess mode; without,
its single-process mode) are expected to fail until start-up records
without start()."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON_MD = os.path.join(ROOT, "docs", "python.md")
TIMEOUT_S = 120  # hang guard only
EXPECTED = (
    'app:requests_total{route="/chat",status="200"} 1.0',
    'app:requests_total{route="/embed",status="200"} 1.0',
    'app:latency_seconds_bucket{le="1.0",route="/embed"} 1.0',
    'app:latency_seconds_count{route="/chat"} 1.0',
)


def quick_start():
    """(the program, the output lines the page shows) of the Quick start."""
    with open(PYTHON_MD, encoding="utf-8") as page:
        text = page.read()
    section = text[text.index("## Quick start\n"):]
    section = section[:section.index("\n## ", 1)]
    program = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    shown = re.search(r"```\n(#.*?)```", section, re.S).group(1)
    return program, [line for line in shown.splitlines() if line != "..."]


def run_program(program, workdir, env_extra=None):
    """Runs program as `python quickstart.py` in workdir; its stdout lines."""
    workdir = os.path.abspath(workdir)
    path = os.path.join(workdir, "quickstart.py")
    with open(path, "w") as out:
        out.write(program)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENSPEED_", "PROMETHEUS_"))}
    env["TMPDIR"] = workdir  # the node's base directory: this test's own
    env["PYTHONPATH"] = os.pathsep.join(os.path.abspath(entry) for entry in
                                        env.get("PYTHONPATH", "").split(os.pathsep) if entry)
    env.update(env_extra or {})
    result = subprocess.run([sys.executable, path], capture_output=True, text=True, cwd=workdir,
                            env=env, timeout=TIMEOUT_S, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_the_quick_start_prints_both_processes_series_and_what_the_page_shows(workdir):
    program, shown = quick_start()
    lines = run_program(program, workdir)
    for line in EXPECTED + tuple(shown):
        assert line in lines, (line, lines[:40])


def test_the_install_line_is_one_line_in_the_readme_python_md_and_packaging_md():
    found = set()
    for doc in ("README.md", "docs/python.md", "docs/packaging.md"):
        with open(os.path.join(ROOT, doc), encoding="utf-8") as text:
            lines = [line.strip() for line in text if line.startswith("B=$(mktemp -d) &&")]
        assert len(lines) == 1, doc
        found.add(lines[0])
    assert len(found) == 1, found
    assert "pip install -v --no-build-isolation --no-index ." in found.pop()


def test_the_quick_start_without_start_records_into_prometheus_multiproc_dir(workdir):
    program, _ = quick_start()
    starts = [line for line in program.splitlines() if "tokenspeed_metrics.start(" in line]
    assert len(starts) == 1, starts
    program = program.replace(starts[0] + "\n", "")  # imports swapped, nothing else
    directory = os.path.abspath(os.path.join(workdir, "multiproc"))
    os.makedirs(directory)
    lines = run_program(program, workdir, {"PROMETHEUS_MULTIPROC_DIR": directory})
    for line in EXPECTED:
        assert line in lines, (line, lines[:40])


SINGLE_PROCESS = """
from tokenspeed_metrics.prometheus_client import REGISTRY, Counter, generate_latest
REQUESTS = Counter("app:requests", "Requests served.", ["route", "status"])
REQUESTS.labels("/chat", "200").inc()
print(generate_latest(REGISTRY).decode())
"""


def test_without_start_or_prometheus_multiproc_dir_a_process_shows_its_own_values(workdir):
    lines = run_program(SINGLE_PROCESS, workdir)
    assert lines == ["# HELP app:requests_total Requests served.",
                     "# TYPE app:requests_total counter",
                     'app:requests_total{route="/chat",status="200"} 1.0', ""]
