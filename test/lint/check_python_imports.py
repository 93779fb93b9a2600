#!/usr/bin/env python3
"""Checks the imports between the modules of the tokenspeed_metrics package
(host/python/tokenspeed_metrics/, read statically).

Fails, printing each, on a cycle among the package's modules (an import
inside a function counts as much as one at the top: it only hides the cycle
until it runs) and on an import of one of the package's modules inside a
function, unless that line says why ("# deferred: ..."). Imports of other
modules (the standard library, the extension) inside a function are only
counted, with --verbose.

Usage: check_python_imports.py SOURCE_ROOT [--verbose]
"""
import ast
import pathlib
import sys

PACKAGE = "tokenspeed_metrics"


def module_name(package_root, path):
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(node, module, is_package, modules):
    """The package's modules node imports (import and from-import)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name in modules]
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        if not is_package:
            anchor.pop()
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    # from package import submodule: the submodule (a package's own
    # __init__ importing its submodules is no cycle).
    found = [base + "." + alias.name for alias in node.names
             if base + "." + alias.name in modules]
    if base in modules and base != module:
        found.append(base)
    return found


def deferred_imports(tree):
    """Import nodes inside a function or class body, at any depth."""
    found = []

    def visit(node, inside):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and inside:
                found.append(child)
            visit(child, inside or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)))

    visit(tree, False)
    return found


def cycles(graph):
    """The strongly connected components with more than one module, or one
    importing itself (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []

    def connect(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or node in graph[node]:
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return result


def main(root, verbose):
    package_root = root / "host" / "python" / PACKAGE
    paths = sorted(package_root.rglob("*.py"))
    modules = {module_name(package_root, path): path for path in paths}
    graph = {module: set() for module in modules}
    problems, other_deferred = [], []
    for module, path in modules.items():
        source = path.read_text()
        lines = source.splitlines()
        tree = ast.parse(source, str(path))
        is_package = path.name == "__init__.py"
        deferred = set(map(id, deferred_imports(tree)))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = imported_modules(node, module, is_package, modules)
            graph[module].update(targets)
            if id(node) not in deferred:
                continue
            where = "%s:%d: %s" % (path.relative_to(root), node.lineno,
                                   lines[node.lineno - 1].strip())
            if not targets:
                other_deferred.append(where)
            elif "# deferred:" not in lines[node.lineno - 1]:
                problems.append("an import of the package inside a function, without a "
                                "'# deferred: <why>' comment: " + where)
    for component in cycles(graph):
        problems.append("an import cycle: " + " -> ".join(component + component[:1]))
    if verbose:
        print("%d modules, %d imports between them" % (
            len(modules), sum(len(targets) for targets in graph.values())))
        print("%d imports of other modules inside a function:" % len(other_deferred))
        for where in other_deferred:
            print("  " + where)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(pathlib.Path(sys.argv[1]), "--verbose" in sys.argv[2:]))
