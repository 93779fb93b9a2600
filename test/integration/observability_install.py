"""`meson install` puts the Grafana dashboard and the Prometheus rules where a
package would: <prefix>/<datadir>/tokenspeed-metrics/, read from the build's
own install plan (`meson introspect --installed`), with nothing installed.

Arguments: meson, the build directory."""
import json
import os
import subprocess
import sys

FILES = ("grafana-dashboard.json", "prometheus-rules.yml")


def introspect(meson, build, what):
    done = subprocess.run([meson, "introspect", build, what], capture_output=True, text=True,
                          timeout=120, check=True)
    return json.loads(done.stdout)


def main():
    meson, build = sys.argv[1:3]
    options = {o["name"]: o["value"] for o in introspect(meson, build, "--buildoptions")}
    target_dir = os.path.join(options["prefix"], options["datadir"], "tokenspeed-metrics")
    installed = introspect(meson, build, "--installed")
    failures = []
    for name in FILES:
        sources = [s for s, d in installed.items()
                   if s.endswith(os.path.join("docs", "observability", name))]
        destinations = [installed[s] for s in sources]
        want = os.path.join(target_dir, name)
        ok = destinations == [want]
        print(f"{'ok  ' if ok else 'FAIL'} {name} -> {destinations} (expected {want})")
        if not ok:
            failures.append(name)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
