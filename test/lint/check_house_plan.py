#!/usr/bin/env python3
"""Checks that docs/architecture.md is the map of the tree it describes.

The "Source map" section is a table, a row per folder: its first cell names
the folder (`host/pipeline/`), the row names the folder's files by their name
without the extension inside backquotes (`sink_delivery`, or a path holding
it). The check fails, printing each problem, on
- a source file of host/, plugins/ or abi/tokenspeed/ (C, C++, Python,
  protobuf) that no row covers, or that its own folder's row does not name
  (the deepest row whose folder holds it): a file moved to another folder
  is caught, since the old row no longer holds it and the new one does not
  name it;
- a row naming a file of another folder (a name that is a source file
  somewhere, but in none of the row's folders), or a path that is not there;
- a folder a row names that is gone;
- a layer diagram in "The house plan" (the code block listing the host's
  folders, top first, each with "links: ..." when it links libraries) that
  is not host/layers.txt read from its end: the same folders in the same
  order, each with the same libraries.

Usage: check_house_plan.py SOURCE_ROOT
"""
import pathlib
import re
import sys

ROOTS = ("host", "plugins", "abi/tokenspeed")
SUFFIXES = (".c", ".h", ".cpp", ".hpp", ".py", ".proto")
SKIPPED_PARTS = ("node_modules", "__pycache__")
FOLDER = re.compile(r"(host|plugins|abi)(/[\w.-]+)*/")
FILE_NAME = re.compile(r"[A-Za-z_]\w*(\.(c|h|cpp|hpp|py|proto))?")
PATH = re.compile(r"[\w.-]+(/[\w.-]+)+/?")


def section(document, heading):
    """The text of a ## section (up to the next ## heading)."""
    match = re.search(rf"^## {re.escape(heading)}.*?\n(.*?)(?=^## |\Z)", document,
                      re.MULTILINE | re.DOTALL)
    return match.group(1) if match else ""


def source_files(root):
    for top in ROOTS:
        for path in sorted((root / top).rglob("*")):
            relative = path.relative_to(root)
            if (path.suffix in SUFFIXES and path.is_file()
                    and not any(part in SKIPPED_PARTS for part in relative.parts)):
                yield relative


def map_rows(text):
    """(folders, quoted texts) of each table row naming at least one folder."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = line.split("|")
        first = re.findall(r"`([^`]+)`", cells[1]) if len(cells) > 2 else []
        folders = [q for q in first if FOLDER.fullmatch(q)]
        if folders:
            rows.append((folders, re.findall(r"`([^`]+)`", line)))
    return rows


def words_of(quoted):
    words = set()
    for text in quoted:
        words.update(re.findall(r"[A-Za-z0-9_]+", text))
    return words


def own_row(relative, rows):
    """The row whose folder is the deepest one holding the file."""
    best, depth = None, -1
    for row in rows:
        for folder in row[0]:
            if str(relative).startswith(folder) and folder.count("/") > depth:
                best, depth = row, folder.count("/")
    return best


def file_problems(files, rows):
    problems = []
    for relative in files:
        row = own_row(relative, rows)
        if row is None:
            problems.append(f"{relative}: no row of docs/architecture.md's source map "
                            "covers its folder")
        elif relative.stem not in words_of(row[1]):
            problems.append(f"{relative}: not named in the source map's row of {row[0][0]}")
    return problems


def path_exists(root, folders, text):
    text = text.rstrip("/")
    for base in [root, root / "host", root / "test"] + [root / f for f in folders]:
        candidate = base / text
        if candidate.exists() or any(
                candidate.with_name(candidate.name + s).exists() for s in SUFFIXES):
            return True
    return False


def mention_problems(root, files, rows):
    """A row naming a file of another folder, or a path that is not there."""
    stems = {}
    for relative in files:
        stems.setdefault(relative.stem, []).append(str(relative))
    problems = []
    for folders, quoted in rows:
        for text in quoted:
            if FOLDER.fullmatch(text):
                if not (root / text).is_dir():
                    problems.append(f"docs/architecture.md's source map names {text}, "
                                    "which is gone")
            elif FILE_NAME.fullmatch(text):
                stem = text.split(".")[0]
                where = stems.get(stem, [])
                if where and not any(p.startswith(f) for p in where for f in folders):
                    problems.append(f"the source map's row of {folders[0]} names {text}, "
                                    f"a file of {where[0].rsplit('/', 1)[0]}/")
            elif PATH.fullmatch(text) and not path_exists(root, folders, text):
                problems.append(f"the source map's row of {folders[0]} names {text}, "
                                "which is not there")
    return problems


def layers(root):
    """host/layers.txt as (folder, libraries), top first."""
    result = []
    for line in (root / "host" / "layers.txt").read_text().splitlines():
        words = line.split("#")[0].split()
        if words:
            links = [w[len("links="):] for w in words if w.startswith("links=")]
            result.append((words[0], ",".join(links).split(",") if links else []))
    return result[::-1]


def diagram(text):
    """The layer diagram of the house plan: (folder, libraries), top first."""
    for block in re.findall(r"^```\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        entries = re.findall(r"^([\w/]+) {2,}(.*?)(?=^[\w/]+ {2,}|\Z)", block,
                             re.MULTILINE | re.DOTALL)
        if entries and entries[-1][0] == "include":
            result = []
            for name, body in entries:
                links = re.search(r"links: ([\w, ]+?)\)?\s*$", body.strip())
                result.append((name, [w.strip() for w in links.group(1).split(",")]
                               if links else []))
            return result
    return []


def diagram_problems(root, document):
    drawn, written = diagram(section(document, "The house plan")), layers(root)
    if not drawn:
        return ["docs/architecture.md: the house plan has no layer diagram ending in include"]
    if drawn == written:
        return []
    return ["docs/architecture.md's layer diagram is not host/layers.txt: drawn "
            + " ".join(f"{n}[{','.join(l)}]" for n, l in drawn) + ", written "
            + " ".join(f"{n}[{','.join(l)}]" for n, l in written)]


def main(root):
    document = (root / "docs" / "architecture.md").read_text()
    rows = map_rows(section(document, "Source map"))
    if not rows:
        print("docs/architecture.md: no '## Source map' section with folder rows")
        return 1
    files = list(source_files(root))
    problems = (file_problems(files, rows) + mention_problems(root, files, rows)
                + diagram_problems(root, document))
    for problem in problems:
        print(problem)
    print(f"house plan: {len(files)} source files, "
          f"{'ok' if not problems else str(len(problems)) + ' problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
