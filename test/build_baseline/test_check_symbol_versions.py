#!/usr/bin/env python3
"""The checker itself: a requirement newer than the baseline fails and names
the symbol; one within it passes.

Usage: test_check_symbol_versions.py CHECKER SHARED_OBJECT"""
import os
import subprocess
import sys
import tempfile


def run(checker, baseline_text, shared_object):
    with tempfile.TemporaryDirectory() as work:
        baseline = os.path.join(work, "baseline.txt")
        with open(baseline, "w", encoding="utf-8") as file:
            file.write(baseline_text)
        return subprocess.run([sys.executable, checker, baseline, shared_object],
                              capture_output=True, text=True, check=False)


def main(checker, shared_object):
    generous = "GLIBC 99\nGLIBCXX 99\nCXXABI 99\nGCC 99\n"
    passed = run(checker, generous, shared_object)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    strict = "GLIBC 2.2.5\nGLIBCXX 99\nCXXABI 99\nGCC 99\n"
    failed = run(checker, strict, shared_object)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "requires GLIBC_2." in failed.stderr and "newer than the baseline's GLIBC_2.2.5" \
        in failed.stderr, failed.stderr
    unlisted = run(checker, "GLIBC 99\n", shared_object)
    assert unlisted.returncode == 1 and "is not in the baseline" in unlisted.stderr, \
        unlisted.stderr
    print("ok")


if __name__ == "__main__":
    main(*sys.argv[1:])
