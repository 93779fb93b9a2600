#!/usr/bin/env python3
"""Checks the #include lines of host/ against host/layers.txt.

Fails, printing each offending line, on an include of a folder that comes
later in the list (an include that runs upward), on an include from a
"public-api" folder of anything but include/ and its own folder, on a folder
the list does not name, and on any cycle among host/'s files. Also checks
each folder's links= (the libraries only its component library links): a
file that includes a library's headers in a folder that does not name it
fails, and so does a folder naming a library none of its files includes.
A folder with "face=HEADER" is used through that header alone: a file of
another folder that includes any other of its headers fails. A row "a/b" is
a part of folder a (host/a/b/), a layer of its own behind a's face: files
outside a/ include it only through that face.

Usage: check_layering.py SOURCE_ROOT
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SYSTEM_INCLUDE = re.compile(r'^\s*#\s*include\s*<([^>]+)>')
# How the headers of each library a folder may link begin (host/meson.build's
# names for them).
LIBRARY_HEADERS = {
    "openssl": ("openssl/", "boost/asio/ssl", "boost/beast/ssl", "tokenspeed/kit/sigv4.hpp"),
    "crypt": ("crypt.h",),
    "yaml": ("yaml.h",),
    "zlib": ("zlib.h", "tokenspeed/kit/gzip.hpp"),
    "protobuf": ("google/protobuf/", "prometheus/scrape/exposition_metrics.pb.h"),
}


def library_of(header):
    for library, prefixes in LIBRARY_HEADERS.items():
        if header.startswith(prefixes):
            return library
    return None


def read_layers(path):
    order, public_api, links, faces = [], set(), {}, {}
    for line in path.read_text().splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        order.append(words[0])
        if "public-api" in words[1:]:
            public_api.add(words[0])
        links[words[0]] = [name for word in words[1:] if word.startswith("links=")
                           for name in word[len("links="):].split(",")]
        faces.update({words[0]: word[len("face="):] for word in words[1:]
                      if word.startswith("face=")})
    return order, public_api, links, faces


def folder_of(relative, rank):
    """The deepest row of host/layers.txt holding a file ("prometheus/server")."""
    for depth in range(len(relative.parts) - 1, 0, -1):
        folder = "/".join(relative.parts[:depth])
        if folder in rank:
            return folder
    return relative.parts[0]


def behind_face(folder, to, target, faces):
    """A face names the header of its folder's top that others must include."""
    top = to.split("/")[0]
    if top not in faces or folder.split("/")[0] == top:
        return None
    face = pathlib.Path(top, faces[top])
    return None if target == face else face


def main(root):
    host = root / "host"
    order, public_api, links, faces = read_layers(host / "layers.txt")
    rank = {folder: index for index, folder in enumerate(order)}
    problems = []
    for folder, names in links.items():
        problems += [f"host/layers.txt: '{folder}' links '{name}', a library the check "
                     f"does not know ({', '.join(LIBRARY_HEADERS)})"
                     for name in names if name not in LIBRARY_HEADERS]
    used = {folder: set() for folder in order}  # folder -> libraries its files include
    graph = {}  # host file -> host files it includes
    files = sorted(p for p in host.rglob("*") if p.suffix in (".cpp", ".hpp", ".h"))
    includes = 0
    for path in files:
        relative = path.relative_to(host)
        folder = folder_of(relative, rank)
        if folder not in rank:
            problems.append(f"host/{relative}: folder '{folder}' is not in host/layers.txt")
            continue
        edges = graph.setdefault(relative, set())
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            system = SYSTEM_INCLUDE.match(line)
            library = library_of(system.group(1)) if system else None
            if library:
                used[folder].add(library)
                if library not in links[folder]:
                    problems.append(f"host/{relative}:{number}: {line.strip()}: uses '{library}', "
                                    f"which host/layers.txt does not give '{folder}' "
                                    f"(links={library})")
            match = INCLUDE.match(line)
            if not match:
                continue
            includes += 1
            name = match.group(1)
            if (path.parent / name).is_file():  # "native_state.hpp": its own folder
                target = (path.parent / name).relative_to(host)
            elif (host / name).is_file():
                target = pathlib.Path(name)
            elif (host / "include" / name).is_file():
                target = pathlib.Path("include") / name
            else:
                continue  # the ABI headers and generated files: below every folder
            edges.add(target)
            to = folder_of(target, rank)
            where = f"host/{relative}:{number}: {line.strip()}"
            if to not in rank:
                problems.append(f"{where}: folder '{to}' is not in host/layers.txt")
            elif folder in public_api and to not in (folder, "include"):
                problems.append(f"{where}: '{folder}' is built on the public API "
                                f"(include/) alone, not on '{to}'")
            elif rank[to] > rank[folder]:
                problems.append(f"{where}: runs upward: '{folder}' may not include "
                                f"'{to}' (host/layers.txt lists '{to}' after it)")
            elif behind_face(folder, to, target, faces):
                problems.append(f"{where}: '{to}' is used through its face alone, "
                                f"{behind_face(folder, to, target, faces)}")
    for folder in order:
        problems += [f"host/layers.txt: '{folder}' links '{name}' but none of its files "
                     f"includes that library's headers" for name in links[folder]
                     if name in LIBRARY_HEADERS and name not in used[folder]]
    problems += cycles(graph)
    for problem in problems:
        print(problem)
    verdict = "ok" if not problems else f"{len(problems)} problem(s)"
    print(f"layering: {len(files)} files, {includes} includes, "
          f"{' < '.join(order)}: {verdict}")
    return 1 if problems else 0


def cycles(graph):
    """One line for each cycle among the files, found by depth-first search."""
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                loop = stack[stack.index(nxt):] + [nxt]
                found.append("include cycle: " + " -> ".join(f"host/{p}" for p in loop))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
