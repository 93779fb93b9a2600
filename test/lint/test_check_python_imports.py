"""The Python import check fails on what it is for: a cycle among the
package's modules (a deferred import closing it included), an import of the
package inside a function without its reason; and passes on a package that
imports at the top without a cycle. Runs the check on small packages."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).with_name("check_python_imports.py")


def run_check(files):
    with tempfile.TemporaryDirectory() as root:
        package = pathlib.Path(root) / "host" / "python" / "tokenspeed_metrics"
        files = {"__init__.py": "", "sub/__init__.py": "", **files}
        for name, text in files.items():
            (package / name).parent.mkdir(parents=True, exist_ok=True)
            (package / name).write_text(text)
        result = subprocess.run([sys.executable, str(CHECK), root], capture_output=True,
                                text=True, timeout=60)
        return result.returncode, result.stdout


class CheckPythonImports(unittest.TestCase):
    def test_top_level_imports_without_a_cycle_pass(self):
        code, out = run_check({
            "__init__.py": "import os\nfrom . import _helper\n",
            "_helper.py": "import sys\n",
            "sub/__init__.py": "from . import a, b\n",
            "sub/a.py": "import tokenspeed_metrics as _tsm\nfrom .b import B\n",
            "sub/b.py": "from ._c import C\n",
            "sub/_c.py": "def f():\n    import socket\n",
        })
        self.assertEqual((code, out), (0, ""))

    def test_a_cycle_fails(self):
        code, out = run_check({
            "sub/a.py": "from .b import B\n",
            "sub/b.py": "from . import a\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("an import cycle: tokenspeed_metrics.sub.a -> tokenspeed_metrics.sub.b",
                      out)

    def test_a_cycle_closed_by_a_deferred_import_fails(self):
        code, out = run_check({
            "sub/a.py": "from .b import B\n",
            "sub/b.py": "def f():\n    from .a import A  # deferred: no excuse for a cycle\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("an import cycle", out)

    def test_a_cycle_through_the_parent_package_fails(self):
        code, out = run_check({
            "__init__.py": "from .sub import a\n",
            "sub/a.py": "import tokenspeed_metrics\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("an import cycle: tokenspeed_metrics -> tokenspeed_metrics.sub.a", out)

    def test_a_deferred_import_of_the_package_fails_unless_it_says_why(self):
        code, out = run_check({"sub/a.py": "def f():\n    from .b import B\n", "sub/b.py": ""})
        self.assertEqual(code, 1)
        self.assertIn("sub/a.py:2: from .b import B", out)
        code, out = run_check({
            "sub/a.py": "def f():\n    from .b import B  # deferred: b imports the world\n",
            "sub/b.py": "",
        })
        self.assertEqual((code, out), (0, ""))


if __name__ == "__main__":
    unittest.main()
