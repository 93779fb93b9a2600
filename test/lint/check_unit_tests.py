#!/usr/bin/env python3
"""Checks that test/unit/ mirrors host/ and plugins/: every source of
host/<folder>/ and plugins/<name>/ has its test file,
test/unit/<folder or name>/<stem>_test.cpp, or its header (the source itself
when it has none) says where it is tested, in a line "Tested in test/...".

That escape is for a piece whose behaviour a component's tests drive (an
internal file of the endpoint, a program's main, the Python module's native
code), and it must be true. Each path it names (a file, or a folder: one of
its files) must exist and exercise the source, which a named test does when

- it includes the source's header (a line `#include "...<folder>/<stem>.hpp"`,
  or `"<stem>.hpp"` for a plugin's), or the header of the component that
  drives it: a file of the same folder that includes the source's header,
  directly or through other files of the folder (prometheus_endpoint.cpp
  includes prometheus_endpoint_impl.hpp: the endpoint's tests drive it), or the
  installed header tokenspeed/metrics/<x>.hpp whose implementation
  host/api/<x>.cpp includes one of those, or an installed header including
  it, as metrics.hpp does (Launcher drives the launcher runtime), or
- it names, as a whole word, one of the names the source declares: a class,
  struct, enum or union, a function or a constant declared at namespace
  scope (column 0, as the house format writes namespace members) in the
  source's header (in the source itself when it has none), or a class whose
  members the source's .cpp defines ("PrometheusEndpoint::Impl::admit": the
  endpoint's split files), never a member function's own name, or
- the source, or a file of its folder that includes it as above, is built
  into a program or module (PROGRAMS below) and the test runs or imports
  that program or module, naming it as PROGRAMS does (the sink helper's
  main, run by the isolation tests; a plugin's files, loaded by its
  integration harness).

Fails, printing each source that has neither a test file nor a true escape;
prints how many sources there are and how many are tested through an escape.

Usage: check_unit_tests.py SOURCE_ROOT
"""
import pathlib
import re
import sys

TESTED_IN = re.compile(r"Tested in ((?:[^.]|\.(?!\s|$))*)", re.MULTILINE)

# The trees whose sources must be tested, each mirrored folder by folder in
# test/unit/; host/include/ is the installed API, tested through api/.
TREES = ("host", "plugins")
SKIPPED = {("host", "include")}

# Sources built into a program or a module, by the path prefix below the
# tree, and the words by which a test runs or imports it.
PROGRAMS = {
    "host/cli/": ("cli_harness",),  # the tokenspeed-metrics executable, run by test/cli
    "host/python/": ("tokenspeed_metrics",),  # the Python module
    "host/isolation/sink_helper_main.cpp": ("TOKENSPEED_METRICS_SINK_HELPER",
                                            "tokenspeed-metrics-sink-helper"),
    # The plugins, each a module of its own folder, and the harnesses that load them.
    "plugins/jsonl/": ("TSM_JSONL_PLUGIN",),
    "plugins/otlp/": ("otlp_common",),
    "plugins/remote_write/": ("remote_write_common",),
    "plugins/statsd/": ("statsd_common",),
    "plugins/zmq_load/": ("zmq_load_common",),
    "plugins/python/": ("plugin_venv",),
}

TYPE = re.compile(r"^(?:template\s*<[^>]*>\s*)?(?:class|struct|union|enum(?:\s+class)?)\s+"
                  r"(?:\[\[[^\]]*\]\]\s+)?(\w+)", re.MULTILINE)
FUNCTION = re.compile(r"^(?!namespace\b|using\b|return\b|template\b|static_assert\b|typedef\b)"
                      r"[A-Za-z_][\w:<>,*&\s]*?(?<!::)\b(\w+)\s*\(", re.MULTILINE)
CONSTANT = re.compile(r"^(?:inline\s+)?(?:static\s+)?(?:constexpr|const)\b[^=;(]*?\b(\w+)\s*[={]",
                      re.MULTILINE)
MEMBER_DEFINITION = re.compile(r"^(?!\s)[^\n(;]*?\b((?:\w+::)+)~?\w+\s*\(", re.MULTILINE)
KEYWORDS = {"if", "for", "while", "switch", "sizeof", "decltype", "noexcept", "alignas",
            "static_cast", "reinterpret_cast", "const_cast", "defined", "main"}
NAMESPACES = {"std", "tokenspeed", "metrics", "kit", "plugin", "boost", "detail"}


def declared_names(source):
    """The names a source declares (see the module's text)."""
    header, implementation = source.with_suffix(".hpp"), source.with_suffix(".cpp")
    text = (header if header.exists() else source).read_text()
    text = re.sub(r"//[^\n]*", "", text)
    names = set(TYPE.findall(text)) | set(FUNCTION.findall(text)) | set(CONSTANT.findall(text))
    if implementation.exists():
        for qualifiers in MEMBER_DEFINITION.findall(implementation.read_text()):
            names |= set(qualifiers.split("::"))
    return names - KEYWORDS - NAMESPACES - {""}


INCLUDE = re.compile(r'^\s*#\s*include\s+["<]([^">]+)[">]', re.MULTILINE)


def included_headers(text):
    return INCLUDE.findall(text)


def includes_header(paths, header):
    name = header.rsplit("/", 1)[-1]
    return any(path == header or path.endswith("/" + header) or path == name for path in paths)


def header_as_included(tree, path):
    """The path by which a test includes the header of a file."""
    relative = path.relative_to(tree)
    if relative.parts[0] == "include":
        return relative.relative_to("include").as_posix()
    if relative.parts[0] == "api" and not path.with_suffix(".hpp").exists():
        return f"tokenspeed/metrics/{path.stem}.hpp"  # the installed header it implements
    return f"{relative.parent.as_posix()}/{path.stem}.hpp"


def drivers(tree, source):
    """The headers through which a test drives the source: its own, those of
    the files of its folder that include a driver, and the installed headers
    implemented in host/api/ by, or including, a driver."""
    files = [p for p in source.parent.iterdir() if p.suffix in (".cpp", ".hpp")]
    for folder in ("api", "include/tokenspeed/metrics"):
        if (tree / folder).is_dir() and (tree / folder) != source.parent:
            files += [p for p in (tree / folder).iterdir() if p.suffix in (".cpp", ".hpp")]
    reached, driving = {header_as_included(tree, source)}, [source]
    grown = True
    while grown:
        grown = False
        for other in files:
            header = header_as_included(tree, other)
            if other not in driving and any(
                    includes_header(included_headers(other.read_text()), driver)
                    for driver in reached):
                reached.add(header)
                driving.append(other)
                grown = True
    return reached, driving


def exercises(test, source, tree, names):
    """Whether the test file exercises the source (see the module's text)."""
    text = test.read_text(errors="replace")
    includes = included_headers(text)
    headers, driving = drivers(tree, source)
    if any(includes_header(includes, header) for header in headers):
        return True
    if names & set(re.findall(r"\w+", text)):
        return True
    paths = [f"{tree.name}/{path.relative_to(tree).as_posix()}" for path in driving]
    return any(path.startswith(prefix) and any(word in text for word in program)
               for path in paths for prefix, program in PROGRAMS.items())


def named_tests(root, text):
    """The files the escape names: each path, or the files of a named folder."""
    named = re.findall(r"test/[\w./-]*\w", text)
    found, missing = [], []
    for name in named:
        path = root / name
        if path.is_dir():
            found.append(sorted(p for p in path.rglob("*") if p.is_file()))
        elif path.is_file():
            found.append([path])
        else:
            missing.append(name)
    return named, found, missing


def check_source(root, tree, source):
    """None when the source has its test file, "escape" when it has a true
    escape, otherwise the problem to print."""
    relative = source.relative_to(tree)
    shown = f"{tree.name}/{relative}"
    unit_test = f"test/unit/{relative.parent}/{source.stem}_test.cpp"
    if (root / unit_test).exists():
        return None
    comment = "\n".join(line.lstrip("/ ") for line in source.read_text().splitlines()
                        if line.startswith("//"))
    comment = re.sub(r"\s*\n\s*", " ", comment)
    match = TESTED_IN.search(comment)
    if not match:
        return f"{shown}: no {unit_test} and no line 'Tested in test/...' in its comment"
    named, found, missing = named_tests(root, match.group(1))
    if not named or missing:
        return f"{shown}: 'Tested in' names no existing file ({', '.join(missing) or match.group(1)})"
    names = declared_names(source)
    idle = [name for name, files in zip(named, found)
            if not any(exercises(test, source, tree, names) for test in files)]
    if idle:
        return (f"{shown}: 'Tested in' names {', '.join(idle)}, which neither includes its "
                f"header nor names what it declares ({', '.join(sorted(names)) or 'nothing'})")
    return "escape"


def sources_of(root):
    for tree_name in TREES:
        tree = root / tree_name
        if not tree.is_dir():
            continue
        for source in sorted(p for p in tree.rglob("*") if p.suffix in (".cpp", ".hpp")):
            relative = source.relative_to(tree)
            if (tree_name, relative.parts[0]) in SKIPPED or len(relative.parts) < 2:
                continue
            if source.suffix == ".cpp" and source.with_suffix(".hpp").exists():
                continue  # the pair is judged by its header
            yield tree, source


def main(root):
    problems, count, escapes = [], 0, 0
    for tree, source in sources_of(root):
        count += 1
        result = check_source(root, tree, source)
        if result == "escape":
            escapes += 1
        elif result:
            problems.append(result)
    for problem in problems:
        print(problem)
    print(f"unit tests: {count} sources, {escapes} tested through 'Tested in', "
          f"{'ok' if not problems else str(len(problems)) + ' without a test'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
