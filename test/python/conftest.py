"""Fixtures shared by the Python tests of this folder and its engine_patterns.

TSM_TEST_TMPDIR is a private directory in the build tree: plugin and run
directories under a world-writable /tmp are refused by the host."""
import os
import shutil
import sys
import tempfile

import pytest

# The tests' one way to wait for a condition (test/eventually.py), shared with
# the other folders: `from eventually import eventually`.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

TMP_ROOT = os.environ.get("TSM_TEST_TMPDIR", tempfile.gettempdir())


@pytest.fixture
def workdir(request):
    """A fresh directory for one test (0755, as a run directory's parent
    must be), removed afterwards."""
    os.makedirs(TMP_ROOT, exist_ok=True)
    path = tempfile.mkdtemp(prefix="tsm-%s-" % request.node.name[:40], dir=TMP_ROOT)
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)
