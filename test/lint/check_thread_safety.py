#!/usr/bin/env python3
"""Runs clang's thread-safety analysis over every translation unit of host/
that includes host/core/thread_safety.hpp, directly or through other headers
of host/ (no other unit can hold an annotation to break): each is compiled as the main build compiles it (its compile_commands.json),
with clang++ -fsyntax-only -Wthread-safety -Wthread-safety-beta and every
other warning off. Prints each diagnostic and fails on any: a GUARDED_BY
member touched without its lock, a REQUIRES function called without it, a
lock not released (host/core/thread_safety.hpp). Exits 77 (skipped) when no
clang++ is given or found.

Usage: check_thread_safety.py SOURCE_ROOT BUILD_ROOT [CLANG]
"""
import concurrent.futures
import json
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

ANALYSIS = ["-fsyntax-only", "-Wno-everything", "-Wthread-safety", "-Wthread-safety-beta",
            "-Werror=thread-safety", "-ferror-limit=0", "-fno-diagnostics-color"]
# Options of the main build that name its outputs or that clang refuses.
DROPPED_WITH_VALUE = {"-o", "-MF", "-MQ", "-MT"}
DROPPED = {"-c", "-MD", "-MMD", "-fdiagnostics-color=always", "-Winvalid-pch"}
GCC_ONLY_PREFIXES = ("-fconcepts-diagnostics-depth", "-fno-semantic-interposition",
                     "-fmax-errors", "-Wlogical-op", "-Wduplicated-")
JOBS = 2
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
ANNOTATIONS = pathlib.Path("host/core/thread_safety.hpp")


def annotated(source, root, seen=None):
    """Whether source includes the annotations, following host/'s own
    quoted includes (resolved as the build's -I host and host/include)."""
    seen = set() if seen is None else seen
    if source in seen:
        return False
    seen.add(source)
    for name in INCLUDE.findall(source.read_text(errors="replace")):
        for base in (source.parent, root / "host", root / "host" / "include"):
            target = (base / name).resolve()
            if target.is_file():
                if target == (root / ANNOTATIONS).resolve() or annotated(target, root, seen):
                    return True
                break
    return False


def clang_arguments(command, clang):
    """The main build's command line for one unit, run by clang for analysis."""
    words = shlex.split(command)
    while words and pathlib.Path(words[0]).name == "ccache":
        words = words[1:]
    kept, skip = [clang], False
    for word in words[1:]:
        if skip:
            skip = False
        elif word in DROPPED_WITH_VALUE:
            skip = True
        elif word not in DROPPED and not word.startswith(GCC_ONLY_PREFIXES):
            kept.append(word)
    return kept + ANALYSIS


def host_units(root, build):
    """(source, directory, command) of each host/ unit, each source once."""
    entries = json.loads((build / "compile_commands.json").read_text())
    units = {}
    for entry in entries:
        directory = pathlib.Path(entry["directory"])
        source = (directory / entry["file"]).resolve()
        if (source.is_relative_to(root / "host") and source not in units
                and annotated(source, root)):
            command = entry.get("command") or shlex.join(entry["arguments"])
            units[source] = (directory, command)
    return units


def analyse(source, directory, command, clang):
    result = subprocess.run(clang_arguments(command, clang), cwd=directory,
                            capture_output=True, text=True, timeout=600)
    return source, result.returncode, (result.stdout + result.stderr).strip()


def main(root, build, clang):
    if not clang:
        print("thread-safety: skipped, no clang++ (install clang: .ci/install-deps)")
        return 77
    units = host_units(root, build)
    failed = []
    with concurrent.futures.ThreadPoolExecutor(JOBS) as pool:
        jobs = [pool.submit(analyse, s, d, c, clang) for s, (d, c) in sorted(units.items())]
        for job in jobs:
            source, code, output = job.result()
            if output:
                print(output)
            if code != 0 or output:
                failed.append(source.relative_to(root))
    for source in failed:
        print(f"{source}: thread-safety analysis failed")
    print(f"thread-safety: {len(units)} host units that include the annotations, "
          f"{'ok' if not failed else str(len(failed)) + ' failed'}")
    return 1 if failed or not units else 0


if __name__ == "__main__":
    source_root = pathlib.Path(sys.argv[1]).resolve()
    build_root = pathlib.Path(sys.argv[2]).resolve()
    given = sys.argv[3] if len(sys.argv) > 3 else ""
    found = given or shutil.which("clang++-14") or shutil.which("clang++") or ""
    sys.exit(main(source_root, build_root, found))
