"""The thread-safety check fails on what it is for: a GUARDED_BY member read
without its lock, a REQUIRES function called without it; passes on code that
holds the lock; leaves out a unit that includes no annotation; drops the
options clang refuses; skips (77) without clang.
Runs the check on a one-file tree and its compile_commands.json."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

CHECK = pathlib.Path(__file__).with_name("check_thread_safety.py")
HOST = pathlib.Path(__file__).resolve().parents[2] / "host"
CLANG = shutil.which("clang++-14") or shutil.which("clang++")

HEADER = """#include "core/thread_safety.hpp"
namespace tokenspeed::metrics {
class Counter {
 public:
  int read() { %s }
 private:
  void bump() TSM_REQUIRES(mutex_) { ++value_; }
  Mutex mutex_;
  int value_ TSM_GUARDED_BY(mutex_) = 0;
};
}  // namespace tokenspeed::metrics
"""


def run_check(body, extra_flags="", clang=CLANG, env=None):
    with tempfile.TemporaryDirectory() as temp:
        root = pathlib.Path(temp) / "src"
        build = pathlib.Path(temp) / "build"
        (root / "host" / "core").mkdir(parents=True)
        build.mkdir()
        shutil.copy(HOST / "core" / "thread_safety.hpp", root / "host" / "core")
        source = root / "host" / "core" / "counter.cpp"
        source.write_text(HEADER % body)
        # A unit that reaches no annotation is left out.
        plain = root / "host" / "core" / "plain.cpp"
        plain.write_text("int plain() { return 0; }\n")
        entries = [{"directory": str(build), "file": str(path),
                    "command": f"ccache c++ -I{HOST} -std=c++20 -Wall {extra_flags} -MD -MQ o.o "
                               f"-MF o.o.d -o o.o -c {path}"} for path in (source, plain)]
        (build / "compile_commands.json").write_text(json.dumps(entries))
        args = [sys.executable, str(CHECK), str(root), str(build)] + ([clang] if clang else [])
        result = subprocess.run(args, capture_output=True, text=True, timeout=300, env=env)
        return result.returncode, result.stdout


@unittest.skipUnless(CLANG, "no clang++")
class CheckThreadSafety(unittest.TestCase):
    def test_a_guarded_member_read_without_its_lock_fails(self):
        code, out = run_check("return value_;")
        self.assertEqual(code, 1, out)
        self.assertIn("counter.cpp:5", out)
        self.assertIn("reading variable 'value_' requires holding mutex 'mutex_'", out)
        self.assertIn("host/core/counter.cpp: thread-safety analysis failed", out)

    def test_a_requires_function_called_without_the_lock_fails(self):
        code, out = run_check("bump(); return 0;")
        self.assertEqual(code, 1, out)
        self.assertIn("calling function 'bump' requires holding mutex 'mutex_'", out)

    def test_code_that_holds_the_lock_passes(self):
        code, out = run_check("MutexLock lock(mutex_); bump(); return value_;")
        self.assertEqual(code, 0, out)
        self.assertIn("thread-safety: 1 host units that include the annotations, ok", out)

    def test_options_clang_refuses_are_dropped(self):
        code, out = run_check("MutexLock lock(mutex_); return value_;",
                              "-fconcepts-diagnostics-depth=3 -Wlogical-op")
        self.assertEqual(code, 0, out)


class CheckThreadSafetyWithoutClang(unittest.TestCase):
    def test_no_clang_skips(self):
        env = dict(os.environ, PATH="/nonexistent")
        code, out = run_check("return 0;", clang=None, env=env)
        self.assertEqual(code, 77, out)
        self.assertIn("skipped, no clang++", out)


if __name__ == "__main__":
    unittest.main()
