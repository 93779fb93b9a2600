#!/usr/bin/env python3
"""Checks that no C or C++ function of host/, plugins/ and abi/tokenspeed/ is
longer than 80 lines (from the first line of its signature to its closing
brace), except those listed in test/lint/long_functions.txt, a ceiling that
may only go down: a function not listed that grows past the limit fails, and
so does a listed one that no longer does (take it off the list). Prints each
problem and the count of long functions.

The functions are found by their braces, in the text stripped of comments,
strings and character literals: a body is a '{' whose header (the text since
the previous ';', '{' or '}') holds a parameter list and is not a control
statement, a lambda, a type or an initializer. A body's own lambdas count
in its length.

Usage: check_function_length.py SOURCE_ROOT
"""
import pathlib
import re
import sys

ROOTS = ("host", "plugins", "abi/tokenspeed")
SUFFIXES = (".c", ".h", ".cpp", ".hpp")
SKIPPED_PARTS = ("node_modules", "__pycache__")
LIMIT = 80
ALLOWED = pathlib.Path("test/lint/long_functions.txt")

CONTROL = re.compile(r"^(if|for|while|switch|catch|do|else|try|return)\b")
TYPE = re.compile(r"\b(class|struct|union|enum|namespace)\b[^()]*$")
NAME = re.compile(r"((?:~?[A-Za-z_]\w*(?:<[^()]*>)?::)*(?:~?[A-Za-z_]\w*|operator\s*[^\s(]+))\s*$")


def stripped(text):
    """text with comments, strings and character literals blanked (newlines
    kept), so that braces and parentheses in them do not count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            open_paren = text.find("(", i + 2)
            delimiter = text[i + 2:open_paren]
            end = text.find(")" + delimiter + '"', open_paren)
            end = n if end < 0 else end + len(delimiter) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def parameter_list(header):
    """(name, index past the closing ')') of the first parameter list of
    header at depth 0 that follows a name, or (None, -1): the '(' after a
    lambda's ']' or a keyword is none."""
    depth = 0
    for index, c in enumerate(header):
        if c in "([":
            if c == "(" and depth == 0:
                before = header[:index]
                match = NAME.search(before)
                if before.rstrip().endswith("]") or not match or match.group(1) in (
                        "if", "for", "while", "switch", "sizeof", "decltype", "alignas", "return"):
                    return None, -1
                close, inner = index, 0
                while close < len(header):
                    inner += {"(": 1, ")": -1}.get(header[close], 0)
                    close += 1
                    if inner == 0:
                        break
                return match.group(1), close
            depth += 1
        elif c in ")]":
            depth -= 1
    return None, -1


def function_name(header):
    """The name of the function whose header (signature up to its '{') this
    is, or None when the '{' opens something else."""
    header = " ".join(header.split())
    if not header or CONTROL.match(header) or TYPE.search(header):
        return None
    if "(" not in header or re.search(r"=\s*$", header):
        return None
    name, end = parameter_list(header)
    if name is None:
        return None
    if re.search(r"(^|[^=!<>])=[^=]", header[:header.index("(")]):
        return None  # an initializer: x = f(...) {...}
    return name


def in_member_initializers(header):
    """True when a '{' after header is a member's braced initializer of a
    constructor (Foo(...) : a_{...}), not the body."""
    header = " ".join(header.split())
    name, end = parameter_list(header)
    if name is None or end < 0:
        return False
    after = header[end:]
    return bool(re.search(r"(?<!:):(?!:)", after)) and bool(re.search(r"[\w>]$", after))


def matching_brace(code, i):
    """The index past the '}' that closes the '{' at i."""
    depth, j = 1, i + 1
    while j < len(code) and depth:
        depth += {"{": 1, "}": -1}.get(code[j], 0)
        j += 1
    return j


def functions(text):
    """(name, first line, last line) of each function body in text."""
    code = stripped(text)
    found = []
    header_start = 0
    parens = 0  # ( and [ open at this level: their braces are no blocks
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c in "([":
            parens += 1
        elif c in ")]":
            parens = max(0, parens - 1)
        elif c == "{" and parens == 0:
            header = code[header_start:i]
            if in_member_initializers(header):
                i = matching_brace(code, i)
                continue
            name = function_name(header)
            if name:
                j = matching_brace(code, i)
                # The signature starts after an access specifier ("public:").
                access = re.match(r"\s*(?:(?:public|private|protected)\s*:(?!:)\s*)*", header)
                first = code.count("\n", 0, header_start + access.end())
                found.append((name, first + 1, code.count("\n", 0, j - 1) + 1))
                i = j
                header_start = i
                continue
            header_start = i + 1  # a namespace, class or initializer: look inside
        elif c in ";}" and parens == 0:
            header_start = i + 1
        elif c == "#" and (i == 0 or code[i - 1] == "\n"):
            # A preprocessor line is no part of a header.
            end = code.find("\n", i)
            i = n if end < 0 else end
            header_start = i
            continue
        i += 1
    return found


def long_functions(root):
    out = []
    for top in ROOTS:
        for path in sorted((root / top).rglob("*")):
            relative = path.relative_to(root)
            if (path.suffix not in SUFFIXES or not path.is_file()
                    or any(part in SKIPPED_PARTS for part in relative.parts)):
                continue
            for name, first, last in functions(path.read_text(errors="replace")):
                if last - first + 1 > LIMIT:
                    out.append((str(relative), name, last - first + 1))
    return out


def main(root):
    allowed_file = root / ALLOWED
    allowed = set()
    if allowed_file.exists():
        for line in allowed_file.read_text().splitlines():
            if line.strip() and not line.startswith("#"):
                path, name = line.split()[:2]
                allowed.add((path, name))
    found = long_functions(root)
    seen = {(path, name) for path, name, _ in found}
    problems = []
    for path, name, lines in found:
        if (path, name) not in allowed:
            problems.append(f"{path}: {name} is {lines} lines, over {LIMIT}: split it")
    for path, name in sorted(allowed - seen):
        problems.append(f"{ALLOWED}: {path} {name} is no longer over {LIMIT} lines (or gone): "
                        "take it off the list")
    for problem in problems:
        print(problem)
    print(f"function length: {len(found)} functions over {LIMIT} lines "
          f"(the list allows {len(allowed)}), "
          f"{'ok' if not problems else str(len(problems)) + ' problems'}")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "--list":
        for path, name, lines in long_functions(pathlib.Path(sys.argv[1]).resolve()):
            print(f"{path} {name} {lines}")
        sys.exit(0)
    sys.exit(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()))
