"""The layering check fails on what it is for: an upward include, a public-API
folder reaching into the host, a folder missing from the list, a cycle; and
passes on a tree that keeps the order. Runs the check on small trees."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).with_name("check_layering.py")
LAYERS = "include\ncore\npipeline links=zlib\nsimulator public-api\n"

FACE_LAYERS = "include\ncore face=face.hpp\npipeline\n"


def run_check(files, layers=LAYERS):
    with tempfile.TemporaryDirectory() as root:
        host = pathlib.Path(root) / "host"
        (host).mkdir()
        (host / "layers.txt").write_text(layers)
        for name, text in files.items():
            (host / name).parent.mkdir(parents=True, exist_ok=True)
            (host / name).write_text(text)
        result = subprocess.run([sys.executable, str(CHECK), root], capture_output=True,
                                text=True, timeout=60)
        return result.returncode, result.stdout


class CheckLayering(unittest.TestCase):
    def test_a_tree_in_order_passes(self):
        code, out = run_check({
            "include/tokenspeed/metrics/api.hpp": "",
            "core/a.hpp": '#include "tokenspeed/metrics/api.hpp"\n',
            "pipeline/b.cpp": '#include "core/a.hpp"\n#include "b.hpp"\n',
            "pipeline/b.hpp": "#include <zlib.h>\n",
            "simulator/s.cpp": '#include "tokenspeed/metrics/api.hpp"\n',
        })
        self.assertEqual(code, 0, out)
        self.assertIn(": ok", out)

    def test_a_folder_with_a_face_is_used_through_it_alone(self):
        code, out = run_check({"core/face.hpp": '#include "core/inner.hpp"\n',
                               "core/inner.hpp": "", "core/inner.cpp": '#include "inner.hpp"\n',
                               "pipeline/b.cpp": '#include "core/face.hpp"\n'}, FACE_LAYERS)
        self.assertEqual(code, 0, out)
        code, out = run_check({"core/face.hpp": "", "core/inner.hpp": "",
                               "pipeline/b.cpp": '#include "core/face.hpp"\n'
                                                 '#include "core/inner.hpp"\n'}, FACE_LAYERS)
        self.assertEqual(code, 1, out)
        self.assertIn('host/pipeline/b.cpp:2: #include "core/inner.hpp": \'core\' is used '
                      "through its face alone, core/face.hpp", out)

    def test_a_part_of_a_folder_is_a_layer_behind_the_folders_face(self):
        layers = "include\nout/store\nout/server\nout face=face.hpp\npipeline\n"
        tree = {"out/store/file.hpp": "", "out/server/http.hpp": '#include "out/store/file.hpp"\n',
                "out/face.hpp": '#include "out/server/http.hpp"\n',
                "pipeline/b.cpp": '#include "out/face.hpp"\n'}
        code, out = run_check(tree, layers)
        self.assertEqual(code, 0, out)
        code, out = run_check(dict(tree, **{"out/store/file.cpp": '#include "out/server/http.hpp"\n'}),
                              layers)
        self.assertEqual(code, 1, out)
        self.assertIn("runs upward: 'out/store' may not include 'out/server'", out)
        code, out = run_check(dict(tree, **{"pipeline/c.cpp": '#include "out/store/file.hpp"\n'}),
                              layers)
        self.assertEqual(code, 1, out)
        self.assertIn("'out/store' is used through its face alone, out/face.hpp", out)

    def test_an_upward_include_fails_naming_the_line(self):
        code, out = run_check({"core/a.cpp": '// x\n#include "pipeline/b.hpp"\n',
                               "pipeline/b.hpp": ""})
        self.assertEqual(code, 1)
        self.assertIn('host/core/a.cpp:2: #include "pipeline/b.hpp": runs upward', out)

    def test_a_public_api_folder_may_not_include_the_host(self):
        code, out = run_check({"simulator/s.cpp": '#include "core/a.hpp"\n', "core/a.hpp": ""})
        self.assertEqual(code, 1)
        self.assertIn("host/simulator/s.cpp:1", out)
        self.assertIn("public API", out)

    def test_a_folder_not_in_the_list_fails(self):
        code, out = run_check({"extra/e.cpp": ""})
        self.assertEqual(code, 1)
        self.assertIn("folder 'extra' is not in host/layers.txt", out)

    def test_a_cycle_within_a_folder_fails(self):
        code, out = run_check({"core/a.hpp": '#include "core/b.hpp"\n',
                               "core/b.hpp": '#include "a.hpp"\n'})
        self.assertEqual(code, 1)
        self.assertIn("include cycle: host/core/a.hpp -> host/core/b.hpp -> host/core/a.hpp", out)


    def test_a_library_the_folder_does_not_name_fails(self):
        code, out = run_check({"core/a.cpp": "#include <vector>\n#include <openssl/ssl.h>\n",
                               "pipeline/b.cpp": "#include <zlib.h>\n"})
        self.assertEqual(code, 1)
        self.assertIn("host/core/a.cpp:2: #include <openssl/ssl.h>: uses 'openssl', which "
                      "host/layers.txt does not give 'core' (links=openssl)", out)

    def test_a_kit_header_counts_as_its_library(self):
        code, out = run_check({"core/a.cpp": "#include <tokenspeed/kit/gzip.hpp>\n",
                               "pipeline/b.cpp": "#include <zlib.h>\n"})
        self.assertEqual(code, 1)
        self.assertIn("uses 'zlib', which host/layers.txt does not give 'core'", out)

    def test_a_named_library_no_file_includes_fails(self):
        code, out = run_check({"pipeline/b.cpp": "#include <vector>\n"})
        self.assertEqual(code, 1)
        self.assertIn("host/layers.txt: 'pipeline' links 'zlib' but none of its files "
                      "includes that library's headers", out)


if __name__ == "__main__":
    unittest.main()
