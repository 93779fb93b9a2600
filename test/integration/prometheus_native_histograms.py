"""A real Prometheus 2.42 started with native histograms on
(--enable-feature=native-histograms) scrapes the /metrics endpoint of
prom-workload, whose two producer processes observe into an exponential
histogram family. Prometheus asks for the protobuf exposition and stores a
native histogram: its count and sum equal what was observed, its buckets
hold the values, and histogram_quantile answers within the bucket of the
true quantile. The same endpoint's text exposition (the classic buckets at
the exponential boundaries) passes promtool and shows the same count and sum."""
import math
import os
import subprocess
import sys

from prom_common import eventually, fetch, query, scraped_workload, skip, verdict

LABELS = "model_name,app_key"
NAME = "tokenspeed:time_to_first_token_seconds"

# (producer, value, weight): both producers write the one series, which the
# launcher merges; a negative value and a zero exercise both signs and the
# zero bucket.
OBSERVATIONS = [(0, 0.1, 3), (0, 0.2, 2), (0, 0.4, 1), (1, 0.2, 2), (1, 3.0, 1), (1, -0.5, 1),
                (1, 0.0, 1)]
COUNT = sum(weight for _, _, weight in OBSERVATIONS)
SUM = sum(value * weight for _, value, weight in OBSERVATIONS)

SCRIPT = f"metric {NAME} native_histogram livemax {LABELS} - Time to first token.\n" + "".join(
    f"op {process} observe {NAME} llama,default {value} {weight}\n"
    for process, value, weight in OBSERVATIONS)


def true_quantile(q):
    values = sorted(v for _, value, weight in OBSERVATIONS for v in [value] * weight)
    return values[max(0, math.ceil(q * len(values)) - 1)]


def text_sample(text, name):
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
    return None


def main():
    program = sys.argv[1]
    prometheus = sys.argv[2] if len(sys.argv) > 2 else ""
    promtool = sys.argv[3] if len(sys.argv) > 3 else ""
    if not prometheus or not os.path.exists(prometheus):
        skip("prometheus (Debian package prometheus) is not installed")

    failures = []

    def check(ok, what):
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failures.append(what)

    with scraped_workload(prometheus, program, SCRIPT,
                          ["--enable-feature=native-histograms"]) as (workload, server, ended):
        base = server.base

        found = {}

        def scraped():
            if server.proc.poll() is not None:
                raise RuntimeError("prometheus exited")
            try:
                result = query(base, NAME)
            except OSError:
                return False  # not ready yet
            if not result or "histogram" not in result[0]:
                return False
            found["histogram"] = result[0]["histogram"][1]
            return float(found["histogram"]["count"]) == COUNT

        check(eventually(scraped, interval=0.5), f"Prometheus stores {NAME} as a native histogram "
              f"with all {COUNT} observations")
        if "histogram" not in found:  # why not, for the log
            print("targets:", fetch(base + "/api/v1/targets")[:2000])
            print("query:", query(base, NAME))
        histogram = found.get("histogram", {})
        check(float(histogram.get("count", "nan")) == COUNT, f"count {histogram.get('count')}")
        check(math.isclose(float(histogram.get("sum", "nan")), SUM, rel_tol=1e-9),
              f"sum {histogram.get('sum')} (expected {SUM})")
        # Each bucket [boundary rule, lower, upper, count] holds the values
        # observed into it.
        for _, value, weight in OBSERVATIONS:
            if value == 0:
                continue
            holding = [b for b in histogram.get("buckets", [])
                       if float(b[1]) < value <= float(b[2]) or float(b[1]) <= value < float(b[2])]
            check(len(holding) == 1 and float(holding[0][3]) >= weight,
                  f"a bucket of Prometheus holds {value} (x{weight}): {holding}")
        for q in (0.5, 0.9):
            result = query(base, f"histogram_quantile({q}, {NAME})")
            got = float(result[0]["value"][1]) if result else float("nan")
            want = true_quantile(q)
            bucket = [b for b in histogram.get("buckets", [])
                      if float(b[1]) <= want <= float(b[2])]
            ok = bool(bucket) and float(bucket[0][1]) <= got <= float(bucket[0][2])
            check(ok, f"histogram_quantile({q}) = {got}, in the bucket of the true "
                      f"quantile {want}: {bucket}")

        # A scraper that asks for text gets the classic buckets.
        text = fetch(workload.url())
        labels = '{model_name="llama",app_key="default"}'
        check(text_sample(text, NAME + "_count" + labels) == COUNT, "text _count")
        check(math.isclose(text_sample(text, NAME + "_sum" + labels) or 0, SUM, rel_tol=1e-9),
              "text _sum")
        check(f'{NAME}_bucket{{model_name="llama",app_key="default",le="+Inf"}} {COUNT}' in text,
              "text +Inf bucket")
        if promtool and os.path.exists(promtool):
            checked = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                                     capture_output=True)
            problems = [line for line in checked.stdout.decode().splitlines() +
                        checked.stderr.decode().splitlines() if "error" in line.lower()]
            check(not problems, f"promtool check metrics finds no error: {problems}")
    return verdict(failures, ended)


if __name__ == "__main__":
    sys.exit(main())
