#!/usr/bin/env python3
"""Checks that docs/architecture.md's source map is the tree's: every source
file of host/, plugins/ and abi/tokenspeed/ (C, C++, Python, protobuf) is
named in the "Source map" section, by its name without the extension inside
backquotes (`sink_delivery`, or a path holding it), and every folder a row
of the map names (`host/pipeline/`) exists. Fails, printing each file the
map does not name and each folder that is gone.

Usage: check_house_plan.py SOURCE_ROOT
"""
import pathlib
import re
import sys

ROOTS = ("host", "plugins", "abi/tokenspeed")
SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".py", ".proto")
SKIPPED_PARTS = ("node_modules", "__pycache__")


def source_map(document):
    """The text of the Source map section (up to the next ## heading)."""
    match = re.search(r"^## Source map\n(.*?)(?=^## |\Z)", document, re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def main(root):
    section = source_map((root / "docs" / "architecture.md").read_text())
    if not section:
        print("docs/architecture.md: no '## Source map' section")
        return 1
    quoted = re.findall(r"`([^`]+)`", section)
    words = set()
    for text in quoted:
        words.update(re.findall(r"[A-Za-z0-9_]+", text))
    problems, count = [], 0
    for top in ROOTS:
        for path in sorted((root / top).rglob("*")):
            relative = path.relative_to(root)
            if (path.suffix not in SUFFIXES or not path.is_file()
                    or any(part in SKIPPED_PARTS for part in relative.parts)):
                continue
            count += 1
            if path.stem not in words:
                problems.append(f"{relative}: not named in docs/architecture.md's source map")
    for text in quoted:
        folder = text.split()[0]
        if re.fullmatch(r"(host|plugins|abi)(/[\w.-]+)*/", folder) and not (root / folder).is_dir():
            problems.append(f"docs/architecture.md's source map names {folder}, which is gone")
    for problem in problems:
        print(problem)
    print(f"house plan: {count} source files, "
          f"{'ok' if not problems else str(len(problems)) + ' problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
