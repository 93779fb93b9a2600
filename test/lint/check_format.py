#!/usr/bin/env python3
"""Checks that the C and C++ sources of abi/, host/, plugins/ and test/ are
formatted as .clang-format says, with Debian's clang-format-14. Prints each
file that is not (run `clang-format-14 -i FILE` to format it).

Usage: check_format.py SOURCE_ROOT [CLANG_FORMAT]
"""
import pathlib
import subprocess
import sys

FOLDERS = ("abi", "host", "plugins", "test")
SUFFIXES = (".c", ".h", ".cpp", ".hpp")


def main(root, clang_format):
    files = sorted(p for folder in FOLDERS for p in (root / folder).rglob("*")
                   if p.suffix in SUFFIXES and p.is_file()
                   and "node_modules" not in p.relative_to(root).parts)
    unformatted = []
    for path in files:
        result = subprocess.run([clang_format, "--dry-run", "--Werror", str(path)],
                                cwd=root, capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            unformatted.append(path.relative_to(root))
    for path in unformatted:
        print(f"{path}: not formatted (clang-format-14 -i {path})")
    print(f"format: {len(files)} files, "
          f"{'ok' if not unformatted else str(len(unformatted)) + ' not formatted'}")
    return 1 if unformatted else 0


if __name__ == "__main__":
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    sys.exit(main(root, sys.argv[2] if len(sys.argv) > 2 else "clang-format-14"))
