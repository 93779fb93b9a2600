"""The tokenspeed-metrics console script of the Python package: replaces this
process with the packaged executable (tokenspeed_metrics/bin/), same
arguments, so its exit status is the command's."""
import os
import sys


def main():
    binary = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tokenspeed-metrics")
    if not os.access(binary, os.X_OK):
        sys.stderr.write("tokenspeed-metrics: the packaged executable is missing: %s\n" % binary)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(binary, [binary] + sys.argv[1:])
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main())
