"""The shipped Prometheus rules file is clean under `promtool check rules`,
and every alert fires and stays quiet where it should under `promtool test
rules` (observability_rules_test.yml).

Arguments: promtool ('' when missing), the rules file, the unit-test file."""
import os
import subprocess
import sys

from prom_common import skip


def run(command):
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    print(f"$ {' '.join(command)}  (exit {done.returncode})\n{done.stdout}{done.stderr}")
    return done


def main():
    promtool, rules, unit_tests = sys.argv[1:4]
    if not promtool or not os.path.exists(promtool):
        skip("promtool (Debian package prometheus) is not installed")
    failures = []
    check = run([promtool, "check", "rules", rules])
    if check.returncode != 0 or "SUCCESS" not in check.stdout:
        failures.append("promtool check rules is not clean")
    if check.stderr.strip():
        failures.append(f"promtool check rules printed warnings: {check.stderr.strip()}")
    if run([promtool, "test", "rules", unit_tests]).returncode != 0:
        failures.append("promtool test rules failed")
    for failure in failures:
        print(f"FAIL {failure}")
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
