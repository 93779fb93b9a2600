#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time: run_fuzzer.py FUZZER CORPUS
WORK_DIR, for TSM_FUZZ_SECONDS seconds (20 when unset). New inputs go to
WORK_DIR/corpus (the committed corpus is only read), a failing input to
WORK_DIR/crash-* (leak-*, timeout-*, oom-*). Exits with the fuzzer's status,
printing the failing input's path and where it belongs once fixed.

The mutations follow TSM_FUZZ_SEED (1 when unset; 0 draws a new seed each
run): a bounded run is then the start of one fixed sequence of inputs, so a
failure in CI happens again on any machine, and a longer local run of the
same seed covers what CI's does. Runs to find new failures set 0."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile

fuzzer, corpus, work = sys.argv[1:4]
seconds = int(os.environ.get("TSM_FUZZ_SECONDS", "20"))
seed = int(os.environ.get("TSM_FUZZ_SEED", "1"))
os.makedirs(os.path.join(work, "corpus"), exist_ok=True)
for old in glob.glob(os.path.join(work, "crash-*")) + glob.glob(os.path.join(work, "timeout-*")):
    os.remove(old)
env = dict(os.environ)
env.setdefault("ASAN_OPTIONS", "detect_leaks=1")
env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
# libFuzzer ends a failed run with 77 by default, which meson reads as a
# skipped test: every failure must exit 1 to be seen as one.
command = [fuzzer, f"-max_total_time={seconds}", f"-seed={seed}", "-timeout=10", "-rss_limit_mb=2048",
           "-error_exitcode=1", "-timeout_exitcode=1",
           "-print_final_stats=1", f"-artifact_prefix={work}/", os.path.join(work, "corpus"), corpus]
# The target's scratch files live under a directory of this run, removed
# whichever way the fuzzer ends (a timed run leaves with _Exit).
scratch = tempfile.mkdtemp(prefix="tsm-fuzz-run-",
                           dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
env["TSM_FUZZ_SCRATCH"] = scratch
print(" ".join(command), flush=True)
try:
    status = subprocess.call(command, env=env)
finally:
    shutil.rmtree(scratch, ignore_errors=True)
for found in glob.glob(os.path.join(work, "crash-*")) + glob.glob(os.path.join(work, "leak-*")) + \
        glob.glob(os.path.join(work, "timeout-*")) + glob.glob(os.path.join(work, "oom-*")):
    print(f"failing input: {found} (copy it into {corpus} once fixed)", flush=True)
sys.exit(status)
