"""plugin_venv.py — real virtual environments with Python plugin packages
installed by pip, offline, from copies of packages/ (pip builds in the source
folder; the copies keep the source tree clean). Never uses the network."""
import os
import shutil
import subprocess
import tempfile

PACKAGES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "packages")
BASE_PYTHON = "/usr/bin/python3"  # Debian's, whose libpython python.so embeds
INSTALL_TIMEOUT_S = 300  # hang guard only


def make_venv(root, name, packages):
    """A venv at root/name (system site packages visible, as the brief's
    engines run) with the packages of packages/ named in `packages`; returns
    its folder."""
    venv = os.path.join(root, name)
    subprocess.run([BASE_PYTHON, "-m", "venv", "--system-site-packages", "--without-pip", venv],
                   check=True, timeout=INSTALL_TIMEOUT_S)
    sources = tempfile.mkdtemp(prefix="src-", dir=root)
    copies = []
    for package in packages:
        copy = os.path.join(sources, package)
        shutil.copytree(os.path.join(PACKAGES, package), copy)
        copies.append(copy)
    # Debian's pip, seen through the system site packages, installs into the venv.
    result = subprocess.run(
        [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--quiet", "--no-index",
         "--no-build-isolation", "--disable-pip-version-check", *copies],
        capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"pip install failed:\n{result.stdout}\n{result.stderr}")
    shutil.rmtree(sources)
    return venv


def venv_environment(venv, extra=None):
    """The environment of a process run inside venv (as `source bin/activate`
    would make it), without the test's TOKENSPEED_* variables."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("TOKENSPEED_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["VIRTUAL_ENV"] = venv
    env["PATH"] = os.path.join(venv, "bin") + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env
