"""The unit test check fails on what it is for: a source with neither its test
file nor an escape, an escape naming a missing file, and an escape naming a
test that does not exercise the source (a false escape); and passes on a
source with its test file and on true escapes, by each way a test exercises
a source. Runs the check on small trees."""
import pathlib
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).with_name("check_unit_tests.py")


def run_check(files):
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            (pathlib.Path(root) / name).parent.mkdir(parents=True, exist_ok=True)
            (pathlib.Path(root) / name).write_text(text)
        result = subprocess.run([sys.executable, str(CHECK), root], capture_output=True,
                                text=True, timeout=60)
        return result.returncode, result.stdout


PARSER = "// parser.hpp — parses.\n#pragma once\nnamespace n {\nint parse_it(const char* text);\n}\n"


def escaped(where):
    return f"// piece.hpp — a piece.\n// Tested in {where}.\n#pragma once\nnamespace n {{\n" \
           "class PieceOfIt {};\n}\n"


class CheckUnitTests(unittest.TestCase):
    def test_a_source_with_its_test_file_passes(self):
        code, out = run_check({"host/core/parser.hpp": PARSER,
                               "test/unit/core/parser_test.cpp": ""})
        self.assertEqual(code, 0, out)
        self.assertIn("unit tests: 1 sources, 0 tested through 'Tested in', ok", out)

    def test_a_source_without_a_test_fails(self):
        code, out = run_check({"host/core/parser.hpp": PARSER})
        self.assertEqual(code, 1)
        self.assertIn("host/core/parser.hpp: no test/unit/core/parser_test.cpp and no line "
                      "'Tested in test/...'", out)

    def test_a_plugin_source_is_checked_as_a_host_source(self):
        code, out = run_check({"plugins/statsd/statsd_packer.hpp": PARSER})
        self.assertEqual(code, 1)
        self.assertIn("plugins/statsd/statsd_packer.hpp: no "
                      "test/unit/statsd/statsd_packer_test.cpp", out)

    def test_an_escape_naming_a_missing_file_fails(self):
        code, out = run_check({"host/core/piece.hpp": escaped("test/unit/core/gone_test.cpp")})
        self.assertEqual(code, 1)
        self.assertIn("'Tested in' names no existing file (test/unit/core/gone_test.cpp)", out)

    def test_a_false_escape_fails(self):
        code, out = run_check({
            "host/core/piece.hpp": escaped("test/unit/core/parser_test.cpp"),
            "host/core/parser.hpp": PARSER,
            "test/unit/core/parser_test.cpp": '#include "core/parser.hpp"\nparse_it("1");\n',
        })
        self.assertEqual(code, 1)
        self.assertIn("host/core/piece.hpp: 'Tested in' names test/unit/core/parser_test.cpp, "
                      "which neither includes its header nor names what it declares "
                      "(PieceOfIt)", out)

    def test_an_escape_is_false_when_one_named_file_does_not_exercise_the_source(self):
        code, out = run_check({
            "host/core/piece.hpp": escaped("test/unit/core/a_test.cpp and test/cli/test_b.py"),
            "test/unit/core/a_test.cpp": "PieceOfIt piece;\n",
            "test/cli/test_b.py": "import os\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("names test/cli/test_b.py, which neither", out)

    def test_an_escape_to_a_test_including_the_header_passes(self):
        code, out = run_check({
            "host/core/piece.hpp": escaped("test/unit/core/a_test.cpp"),
            "test/unit/core/a_test.cpp": '#include "core/piece.hpp"\n',
        })
        self.assertEqual(code, 0, out)
        self.assertIn("1 tested through 'Tested in', ok", out)

    def test_an_escape_to_a_test_naming_a_declared_function_passes(self):
        code, out = run_check({
            "host/core/parse.hpp": PARSER.replace("parser.hpp", "parse.hpp") .replace(
                "parses.", "parses.\n// Tested in test/unit/core/a_test.cpp."),
            "test/unit/core/a_test.cpp": "auto x = parse_it(\"1\");\n",
        })
        self.assertEqual(code, 0, out)

    def test_a_split_file_is_exercised_through_the_component_that_includes_it(self):
        code, out = run_check({
            "host/prometheus/piece.hpp": escaped("test/unit/prometheus/endpoint_test.cpp"),
            "host/prometheus/server.hpp": '#include "prometheus/piece.hpp"\n',
            "host/prometheus/endpoint.hpp": "// endpoint.hpp\n",
            "host/prometheus/endpoint.cpp": '#include "prometheus/server.hpp"\n',
            "test/unit/prometheus/endpoint_test.cpp": '#include "prometheus/endpoint.hpp"\n',
            "test/unit/prometheus/server_test.cpp": "",
        })
        self.assertEqual(code, 0, out)

    def test_a_member_definition_names_the_class_a_split_file_implements(self):
        code, out = run_check({
            "host/prometheus/piece.cpp": "// piece.cpp\n// Tested in "
                                         "test/unit/prometheus/endpoint_test.cpp.\n"
                                         "void Endpoint::Impl::accept() {}\n",
            "test/unit/prometheus/endpoint_test.cpp": "Endpoint endpoint;\n",
        })
        self.assertEqual(code, 0, out)

    def test_a_member_function_name_alone_does_not_make_an_escape_true(self):
        code, out = run_check({
            "host/api/producer.cpp": "// producer.cpp\n// Tested in test/unit/api/other_test.cpp.\n"
                                   "void Producer::close() {}\n",
            "test/unit/api/other_test.cpp": "sink.close();\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("host/api/producer.cpp: 'Tested in' names test/unit/api/other_test.cpp, which "
                      "neither includes its header nor names what it declares (Producer)", out)

    def test_a_runtime_piece_is_exercised_through_the_installed_api(self):
        code, out = run_check({
            "host/process/piece.hpp": escaped("test/unit/api/launcher_test.cpp"),
            "host/api/launcher.cpp": '#include "process/piece.hpp"\n',
            "host/include/tokenspeed/metrics/launcher.hpp": "",
            "host/include/tokenspeed/metrics/metrics.hpp":
                '#include "tokenspeed/metrics/launcher.hpp"\n',
            "test/unit/api/launcher_test.cpp": '#include "tokenspeed/metrics/metrics.hpp"\n',
        })
        self.assertEqual(code, 0, out)

    def test_a_program_source_is_exercised_by_a_test_that_runs_the_program(self):
        code, out = run_check({
            "host/cli/main.cpp": "// main.cpp\n// Tested in test/cli/test_usage.py.\n"
                                 "int main() {}\n",
            "test/cli/test_usage.py": "import cli_harness\n",
        })
        self.assertEqual(code, 0, out)

    def test_a_program_source_is_not_exercised_by_a_test_of_another_program(self):
        code, out = run_check({
            "host/cli/main.cpp": "// main.cpp\n// Tested in test/python/test_module.py.\n"
                                 "int main() {}\n",
            "test/python/test_module.py": "import tokenspeed_metrics\n",
        })
        self.assertEqual(code, 1)
        self.assertIn("host/cli/main.cpp: 'Tested in' names test/python/test_module.py", out)

    def test_a_named_folder_is_true_when_one_of_its_files_exercises_the_source(self):
        code, out = run_check({
            "host/core/piece.hpp": escaped("test/unit/isolation/"),
            "test/unit/isolation/a_test.cpp": "",
            "test/unit/isolation/b_test.cpp": "PieceOfIt piece;\n",
        })
        self.assertEqual(code, 0, out)


if __name__ == "__main__":
    unittest.main()
