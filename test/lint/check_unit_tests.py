#!/usr/bin/env python3
"""Checks that test/unit/ mirrors host/: every source of host/ has its test
file, test/unit/<folder>/<name>_test.cpp, or its header (the source itself
when it has none) says where it is tested, in a line "Tested in test/...",
naming files that exist. Fails, printing each source that does neither.

Usage: check_unit_tests.py SOURCE_ROOT
"""
import pathlib
import re
import sys

TESTED_IN = re.compile(r"Tested in ((?:[^.]|\.(?!\s|$))*)", re.MULTILINE)


def main(root):
    host, unit = root / "host", root / "test" / "unit"
    problems, count = [], 0
    sources = sorted(p for p in host.rglob("*") if p.suffix in (".cpp", ".hpp"))
    for source in sources:
        relative = source.relative_to(host)
        if relative.parts[0] == "include":
            continue  # the installed API: its implementation in api/ is what is tested
        header = source.with_suffix(".hpp")
        if source.suffix == ".cpp" and header.exists():
            continue  # the pair is judged by its header
        count += 1
        stem = source.stem
        if (unit / relative.parent / f"{stem}_test.cpp").exists():
            continue
        comment = "\n".join(line.lstrip("/ ") for line in source.read_text().splitlines()
                            if line.startswith("//"))
        comment = re.sub(r"\s*\n\s*", " ", comment)
        match = TESTED_IN.search(comment)
        if not match:
            problems.append(f"host/{relative}: no test/unit/{relative.parent}/{stem}_test.cpp "
                            "and no line 'Tested in test/...' in its comment")
            continue
        named = re.findall(r"test/[\w./-]*\w", match.group(1))
        missing = [name for name in named if not (root / name).exists()]
        if not named or missing:
            problems.append(f"host/{relative}: 'Tested in' names no existing file "
                            f"({', '.join(missing) or match.group(1)})")
    for problem in problems:
        print(problem)
    print(f"unit tests: {count} host sources, "
          f"{'ok' if not problems else str(len(problems)) + ' without a test'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
