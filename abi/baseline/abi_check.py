#!/usr/bin/env python3
"""abi_check.py — compares the C ABI of tokenspeed/metric_reporter.h, as the
probe library describes it (abi_probe.c), with a stored libabigail baseline,
and updates the baseline. The rule it enforces is docs/abi.md's:

  compatible    the only differences are data members appended to structs
                that start with `uint32_t struct_size`, each at or past the
                struct's old size (never in its old tail padding), and probe
                functions added (a new type); harmless enum additions are
                filtered by abidiff itself
  incompatible  anything else: a member removed, moved, renamed or retyped,
                a struct shrunk, an enumerator changed, a function removed

Usage:
  abi_check.py check  --probe LIB --baseline FILE [--release] [tool options]
  abi_check.py update --probe LIB --baseline FILE [tool options]
tool options: --abidw PATH --abidiff PATH --required

check: incompatible fails (exit 1) with abidiff's report. A compatible
difference passes against a --release baseline (a released ABI, frozen), and
fails against the current baseline, which must be updated in the same commit
(`meson compile -C BUILD update-abi-baseline`). Exit 77 (skipped) when abidw
or abidiff is missing, unless --required.
update: writes the probe's ABI into the baseline; refuses an incompatible
change (a new API major starts from a deleted baseline, docs/abi.md).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SKIP = 77
UPDATE_COMMAND = "meson compile -C <build dir> update-abi-baseline"

# abidiff's exit status bits (libabigail's abidiff_status).
ABIDIFF_ERROR = 1
ABIDIFF_USAGE_ERROR = 2
ABIDIFF_ABI_CHANGE = 4
ABIDIFF_ABI_INCOMPATIBLE_CHANGE = 8

# abidw output that does not depend on the machine, the build directory or
# the source path: the baseline is compared as text when nothing changed.
ABIDW_OPTIONS = ["--no-corpus-path", "--no-comp-dir-path", "--no-show-locs",
                 "--type-id-style", "hash", "--drop-undefined-syms"]


def find_tool(given, name):
    if given:
        return given if os.access(given, os.X_OK) else None
    return shutil.which(name)


def describe(probe, abidw, out_path):
    """Writes the probe's ABI (abidw XML) into out_path, the source path
    reduced to its file name."""
    result = subprocess.run([abidw, *ABIDW_OPTIONS, probe], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        sys.exit(f"abidw failed on {probe} (status {result.returncode}):\n{result.stderr}")
    text = re.sub(r"(<abi-instr [^>]*path=')[^']*/([^'/]*')", r"\1\2", result.stdout)
    symbols = set(re.findall(r"<elf-symbol name='(tsm_abi_probe_\w+)' type='func-type'", text))
    described = set(re.findall(r"<function-decl name='(tsm_abi_probe_\w+)'", text))
    if not symbols or symbols != described:
        sys.exit(f"{probe}: its debug information describes {len(described)} of its "
                 f"{len(symbols)} functions: build it with -g and without optimization "
                 "(identical functions folded at -O2 take their types with them)")
    with open(out_path, "w", encoding="utf-8") as out:
        out.write(text)


def structs_with_struct_size(abi_path):
    """Names of the structs whose first data member is struct_size."""
    names = set()
    for decl in ET.parse(abi_path).getroot().iter("class-decl"):
        first = decl.find("data-member/var-decl")
        if first is not None and first.get("name") == "struct_size":
            names.add(decl.get("name"))
    return names


BLOCK_HEAD = re.compile(r"^'struct (\w+)' changed:$")
SIZE_LINE = re.compile(r"^  type size changed from (\d+) to (\d+) \(in bits\)$")
INSERTIONS_LINE = re.compile(r"^  \d+ data member insertions?:$")
INSERTED_LINE = re.compile(r"^    '[^']*', at offset (\d+) \(in bits\)$")
SUMMARY_LINE = re.compile(r"^(Leaf changes summary|Changed leaf types summary|"
                          r"Removed/Changed/Added (functions|variables) summary):")
ADDED_FUNCTIONS = re.compile(r"^\d+ Added functions?:$|^  \[A\] ")


def appended_only(leaf_report, guarded):
    """Whether abidiff's leaf-changes report holds nothing but appended
    members of structs in guarded (and added probe functions). Returns
    (bool, reason)."""
    lines = leaf_report.splitlines()
    summary = [line for line in lines if line.startswith("Removed/Changed/Added")]
    for line in summary:
        if re.search(r": [1-9]\d* Removed|, [1-9]\d* Changed", line):
            return False, line
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or SUMMARY_LINE.match(line) or ADDED_FUNCTIONS.match(line):
            i += 1
            continue
        head = BLOCK_HEAD.match(line)
        if not head:
            return False, f"not an appended member: {line.strip()}"
        name = head.group(1)
        if name not in guarded:
            return False, f"struct {name} has no leading struct_size: it cannot grow"
        i += 1
        old_size = None
        grew = False
        while i < len(lines) and lines[i].startswith("  "):
            size = SIZE_LINE.match(lines[i])
            if size:
                old_size = int(size.group(1))
                if int(size.group(2)) <= old_size:
                    return False, f"struct {name}: {lines[i].strip()}"
                i += 1
                continue
            if INSERTIONS_LINE.match(lines[i]) and old_size is not None:
                i += 1
                while i < len(lines) and INSERTED_LINE.match(lines[i]):
                    offset = int(INSERTED_LINE.match(lines[i]).group(1))
                    if offset < old_size:
                        return False, (f"struct {name}: member inserted at bit {offset}, "
                                       f"inside the old size of {old_size} bits")
                    grew = True
                    i += 1
                continue
            return False, f"struct {name}: {lines[i].strip()}"
        if not grew:
            return False, f"struct {name} changed without an appended member"
    return True, ""


def compare(baseline, current, abidiff):
    """Returns (verdict, report): verdict is 'same', 'compatible' or
    'incompatible'."""
    full = subprocess.run([abidiff, baseline, current], capture_output=True, text=True,
                          check=False)
    if full.returncode & (ABIDIFF_ERROR | ABIDIFF_USAGE_ERROR):
        sys.exit(f"abidiff failed (status {full.returncode}):\n{full.stdout}{full.stderr}")
    if full.returncode == 0:
        return "same", full.stdout
    if full.returncode & ABIDIFF_ABI_INCOMPATIBLE_CHANGE:
        return "incompatible", full.stdout
    leaf = subprocess.run([abidiff, "--leaf-changes-only", baseline, current],
                          capture_output=True, text=True, check=False)
    guarded = structs_with_struct_size(baseline) & structs_with_struct_size(current)
    ok, reason = appended_only(leaf.stdout, guarded)
    if ok:
        return "compatible", leaf.stdout
    return "incompatible", f"{reason}\n\n{leaf.stdout}\n{full.stdout}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["check", "update"])
    parser.add_argument("--probe", required=True)
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--release", action="store_true",
                        help="a released, frozen baseline: a compatible change passes")
    parser.add_argument("--abidw")
    parser.add_argument("--abidiff")
    parser.add_argument("--required", action="store_true",
                        help="fail instead of skipping when a tool is missing")
    args = parser.parse_args()

    abidw, abidiff = find_tool(args.abidw, "abidw"), find_tool(args.abidiff, "abidiff")
    if not abidw or not abidiff:
        message = "abidw and abidiff (Debian's abigail-tools) are needed"
        if args.required:
            sys.exit(message)
        print(f"{message}: skipped")
        return SKIP

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    baseline_name = os.path.relpath(os.path.realpath(args.baseline), root)
    with tempfile.TemporaryDirectory(prefix="tsm-abi-") as tmp:
        current = os.path.join(tmp, "current.abi")
        describe(args.probe, abidw, current)
        exists = os.path.exists(args.baseline)
        verdict, report = compare(args.baseline, current, abidiff) if exists else ("new", "")

        if args.mode == "update":
            if verdict == "incompatible":
                print(report)
                sys.exit(f"refused: the ABI changed incompatibly against {baseline_name}. "
                         "Append fields instead; a new API major starts from a deleted "
                         "baseline (docs/abi.md)")
            if verdict == "same":
                # abidiff filters harmless changes (an enumerator added): the
                # baseline records them anyway, so that removing one is seen.
                with open(args.baseline, encoding="utf-8") as stored, \
                        open(current, encoding="utf-8") as described:
                    if stored.read() == described.read():
                        print(f"{baseline_name}: up to date")
                        return 0
            shutil.copyfile(current, args.baseline)
            print(report)
            print(f"{baseline_name}: {'written' if verdict == 'new' else 'updated'} "
                  "(commit it with the header change)")
            return 0

        if verdict == "new":
            sys.exit(f"{baseline_name} does not exist: run `{UPDATE_COMMAND}`")
        if verdict == "same":
            print(f"ABI identical to {baseline_name}")
            return 0
        print(report)
        if verdict == "incompatible":
            sys.exit(f"incompatible ABI change against {baseline_name} (report above): "
                     "a plugin built against it would no longer load or run correctly")
        if args.release:
            print(f"compatible with {baseline_name}: only appended fields (report above)")
            return 0
        sys.exit(f"the ABI grew compatibly, but {baseline_name} is out of date: run "
                 f"`{UPDATE_COMMAND}` and commit it with the header change")


if __name__ == "__main__":
    sys.exit(main())
