"""The house-plan check fails on what it is for: a source file the source
map does not name, a folder the map names that is gone; and passes on a tree
the map describes. Runs the check on small trees."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).with_name("check_house_plan.py")
MAP = """# Architecture

## Source map

| file | responsibility |
|---|---|
| `host/core/` | `series_bound`, `strict_json` (Boost.JSON) |
| `plugins/jsonl/` | `jsonl_sink` |

## Next
`not_here` is outside the section.
"""


def run_check(files, document=MAP):
    with tempfile.TemporaryDirectory() as root:
        base = pathlib.Path(root)
        (base / "docs").mkdir()
        (base / "docs" / "architecture.md").write_text(document)
        for name in ("host/core", "plugins/jsonl", "abi/tokenspeed"):
            (base / name).mkdir(parents=True)
        for name in files:
            (base / name).write_text("")
        result = subprocess.run([sys.executable, str(CHECK), root], capture_output=True,
                                text=True, timeout=60)
        return result.returncode, result.stdout


class CheckHousePlan(unittest.TestCase):
    def test_a_tree_the_map_names_passes(self):
        code, out = run_check(["host/core/series_bound.cpp", "host/core/series_bound.hpp",
                               "host/core/strict_json.cpp", "plugins/jsonl/jsonl_sink.cpp"])
        self.assertEqual(code, 0, out)
        self.assertIn("4 source files, ok", out)

    def test_a_file_the_map_does_not_name_fails_naming_it(self):
        code, out = run_check(["host/core/series_bound.cpp", "host/core/not_here.hpp"])
        self.assertEqual(code, 1, out)
        self.assertIn("host/core/not_here.hpp: not named", out)

    def test_a_folder_the_map_names_that_is_gone_fails(self):
        code, out = run_check(["host/core/series_bound.cpp"],
                              MAP.replace("`plugins/jsonl/`", "`plugins/gone/`"))
        self.assertEqual(code, 1, out)
        self.assertIn("names plugins/gone/, which is gone", out)


if __name__ == "__main__":
    unittest.main()
