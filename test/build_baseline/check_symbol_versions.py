#!/usr/bin/env python3
"""Checks the symbol versions that shared objects require against a build
baseline: a list of "LIBRARY NEWEST-VERSION" lines (plugins/symbol-versions.txt).
Reads each object's undefined dynamic symbols with `objdump -T`; a symbol
bound to a newer version than the list allows, or to a versioned library
the list does not name, is printed with the file and the symbol, and the
exit status is 1.

Usage: check_symbol_versions.py BASELINE FILE_OR_DIRECTORY...
       (a directory: every *.so in it, not recursively)
Environment: OBJDUMP (default objdump).
"""
import os
import re
import subprocess
import sys

# "0000000000000000      DF *UND*  0000000000000000 (GLIBC_2.34) pthread_once"
UNDEFINED = re.compile(r"\*UND\*\s+[0-9a-fA-F]+\s+\(?([A-Za-z][\w.]*)\)?\s+(\S+)\s*$")
VERSION = re.compile(r"^(.*?)_(\d+(?:\.\d+)*)$")


def split_version(name):
    """'GLIBC_2.34' -> ('GLIBC', (2, 34)); 'CURL_OPENSSL_4' -> ('CURL_OPENSSL', (4,))."""
    match = VERSION.match(name)
    if not match:
        return name, ()
    return match.group(1), tuple(int(part) for part in match.group(2).split("."))


def read_baseline(path):
    newest = {}
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, 1):
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if len(fields) != 2:
                sys.exit(f"{path}:{number}: expected 'LIBRARY VERSION', got {line.strip()!r}")
            newest[fields[0]] = tuple(int(part) for part in fields[1].split("."))
    return newest


def required_versions(path, objdump):
    """(symbol, version name) for every undefined dynamic symbol with a version."""
    result = subprocess.run([objdump, "-T", path], capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"{objdump} -T {path} failed: {result.stderr.strip()}")
    required = []
    for line in result.stdout.splitlines():
        match = UNDEFINED.search(line)
        if match and match.group(1) not in ("Base",):
            required.append((match.group(2), match.group(1)))
    return required


def shared_objects(arguments):
    for argument in arguments:
        if os.path.isdir(argument):
            yield from sorted(os.path.join(argument, name) for name in os.listdir(argument)
                              if name.endswith(".so"))
        else:
            yield argument


def show(version):
    return ".".join(str(part) for part in version)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    newest = read_baseline(argv[1])
    objdump = os.environ.get("OBJDUMP", "objdump")
    problems, checked = [], 0
    for path in shared_objects(argv[2:]):
        checked += 1
        highest = {}
        for symbol, name in required_versions(path, objdump):
            library, version = split_version(name)
            if library not in newest:
                problems.append(f"{path}: {symbol} requires {name}: {library} is not in the "
                                f"baseline {argv[1]}")
            elif version > newest[library]:
                problems.append(f"{path}: {symbol} requires {name}, newer than the baseline's "
                                f"{library}_{show(newest[library])}")
            if library not in highest or version > highest[library]:
                highest[library] = version
        print(f"{path}: " + ", ".join(f"{library}_{show(version)}"
                                      for library, version in sorted(highest.items())))
    if checked == 0:
        problems.append("no shared object to check")
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
