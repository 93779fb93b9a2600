"""The house-plan check fails on what it is for: a source file the source
map does not name, one named only in another folder's row (a moved file), a
row naming another folder's file or a path that is not there, a folder that
is gone, and a layer diagram that is not host/layers.txt; and passes on a
tree the page describes. Runs the check on small trees."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).with_name("check_house_plan.py")
LAYERS = "# bottom first\ninclude\ncore\nconfig links=yaml\nprometheus links=openssl,zlib\ncli\n"
DOCUMENT = """# Architecture

## The house plan

```
abi/        not the layer diagram: it does not end in include
```

```
cli          the executable
prometheus   the built-in output, over
             two lines (links: openssl, zlib)
config       flags (links: yaml)
core         what every folder uses
include      the installed headers
```

## Source map

| file | responsibility |
|---|---|
| `host/core/` | `series_bound`, `strict_json` (Boost.JSON) |
| `host/config/` | `web_config`, read through `core/strict_json` |
| `plugins/jsonl/` | `jsonl_sink` |

## Next
`not_here` is outside the section.
"""
FILES = ["host/core/series_bound.cpp", "host/core/series_bound.hpp",
         "host/core/strict_json.cpp", "host/config/web_config.cpp",
         "plugins/jsonl/jsonl_sink.cpp"]


def run_check(files=FILES, document=DOCUMENT, layers=LAYERS):
    with tempfile.TemporaryDirectory() as root:
        base = pathlib.Path(root)
        (base / "docs").mkdir()
        (base / "docs" / "architecture.md").write_text(document)
        for name in ("host/core", "host/config", "plugins/jsonl", "abi/tokenspeed"):
            (base / name).mkdir(parents=True)
        (base / "host" / "layers.txt").write_text(layers)
        for name in files:
            (base / name).parent.mkdir(parents=True, exist_ok=True)
            (base / name).write_text("")
        result = subprocess.run([sys.executable, str(CHECK), root], capture_output=True,
                                text=True, timeout=60)
        return result.returncode, result.stdout


class CheckHousePlan(unittest.TestCase):
    def test_a_tree_the_page_describes_passes(self):
        code, out = run_check()
        self.assertEqual(code, 0, out)
        self.assertIn("5 source files, ok", out)

    def test_a_file_the_map_does_not_name_fails_naming_it(self):
        code, out = run_check(FILES + ["host/core/not_here.hpp"])
        self.assertEqual(code, 1, out)
        self.assertIn("host/core/not_here.hpp: not named in the source map's row of host/core/",
                      out)

    def test_a_file_moved_to_another_folder_fails(self):
        moved = [f.replace("host/config/web_config", "host/core/web_config") for f in FILES]
        code, out = run_check(moved)
        self.assertEqual(code, 1, out)
        self.assertIn("host/core/web_config.cpp: not named in the source map's row of "
                      "host/core/", out)
        self.assertIn("row of host/config/ names web_config, a file of host/core/", out)

    def test_a_file_no_row_covers_fails(self):
        code, out = run_check(FILES + ["host/cli/main.cpp"])
        self.assertEqual(code, 1, out)
        self.assertIn("host/cli/main.cpp: no row", out)

    def test_a_path_that_is_not_there_fails(self):
        code, out = run_check(document=DOCUMENT.replace("core/strict_json", "core/strict_yaml"))
        self.assertEqual(code, 1, out)
        self.assertIn("row of host/config/ names core/strict_yaml, which is not there", out)

    def test_a_folder_the_map_names_that_is_gone_fails(self):
        code, out = run_check(document=DOCUMENT.replace("`plugins/jsonl/`", "`plugins/gone/`"))
        self.assertEqual(code, 1, out)
        self.assertIn("names plugins/gone/, which is gone", out)

    def test_a_diagram_in_another_order_fails(self):
        code, out = run_check(layers=LAYERS.replace("core\nconfig links=yaml\n",
                                                    "config links=yaml\ncore\n"))
        self.assertEqual(code, 1, out)
        self.assertIn("layer diagram is not host/layers.txt", out)

    def test_a_diagram_missing_a_library_fails(self):
        code, out = run_check(layers=LAYERS.replace("links=openssl,zlib",
                                                    "links=openssl,zlib,protobuf"))
        self.assertEqual(code, 1, out)
        self.assertIn("drawn cli[] prometheus[openssl,zlib]", out)
        self.assertIn("written cli[] prometheus[openssl,zlib,protobuf]", out)

    def test_a_folder_missing_from_the_diagram_fails(self):
        code, out = run_check(layers=LAYERS + "python public-api\n")
        self.assertEqual(code, 1, out)
        self.assertIn("written python[] cli[]", out)


if __name__ == "__main__":
    unittest.main()
