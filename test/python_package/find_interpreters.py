"""find_interpreters.py — the interpreters the package is proven for, one per
line as "<name> <path>": the newest patch release of each CPython 3.10-3.13
under pyenv ($PYENV_ROOT, or ~/.pyenv), then Debian's /usr/bin/python3.
Never names a patch version: what is installed decides."""
import glob
import os
import re


def pyenv_interpreters():
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    newest = {}
    for folder in glob.glob(os.path.join(root, "versions", "3.1[0-3].*")):
        match = re.fullmatch(r"3\.(1[0-3])\.(\d+)", os.path.basename(folder))
        python = os.path.join(folder, "bin", "python3")
        if match is None or not os.access(python, os.X_OK):
            continue  # a pre-release or a variant (3.12.0rc1, 3.13.0t)
        minor, patch = int(match.group(1)), int(match.group(2))
        if minor not in newest or patch > newest[minor][0]:
            newest[minor] = (patch, python)
    return [(f"3.{minor}", newest[minor][1]) for minor in sorted(newest)]


def main():
    found = pyenv_interpreters()
    if os.access("/usr/bin/python3", os.X_OK):
        found.append(("debian", "/usr/bin/python3"))
    for name, path in found:
        print(name, path)


if __name__ == "__main__":
    main()
