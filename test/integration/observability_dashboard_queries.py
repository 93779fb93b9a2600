"""Every query of the shipped Grafana dashboard, and the shipped alerting
rules, against a real Prometheus 2.42 scraping a real `simulate` run (every
second) whose output 'stalled' (test/plugins/stalls_in_emit) blocks in emit:

- the dashboard is Grafana's JSON with a Prometheus data source variable and
  the model_name/app_key/dp_rank variables, every panel on that data source;
- each template variable's label_values() query, through the label values
  API Grafana uses, returns the run's label values;
- each panel query, with the variables set as Grafana would and Grafana's
  interval variables set for a 1 s scrape, returns data through
  /api/v1/query, every series carrying the labels its legend names, with the
  run's values; queries on a family that appears only at close are run once
  the producers have stopped, and a query on a family this build does not
  define, or that appears only with a producer crash, is listed as skipped
  with its reason;
- the rules file loads into the server and every rule evaluates cleanly; with
  its windows shortened to 10 s (and every `for` to 1 s), the stall and
  dropping expressions hold for 'stalled', the stall expression never for
  'jsonl', and the stall alert fires; once the engine is gone the
  endpoint-down expression holds and its alert fires.

Never writes outside its temporary directory; waits are hang guards only.

Arguments: prometheus ('' when missing), the host library (to tell which
families this build defines), the dashboard, the rules file, and the folders
of jsonl.so and stalls_in_emit.so; TSM_BINARY: tokenspeed-metrics (run by
test/integration/simulate_harness.py, the one harness of `simulate`).
"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse

from prom_common import eventually, fetch, free_port, skip
from simulate_harness import Simulation

JOB = "tokenspeed"
RANKS = {"0", "1"}
MODEL, APP_KEY = "llama", "default"
OUTPUTS = {"jsonl", "stalled"}
# Seconds the run records, then keeps serving /metrics after its producers
# stopped. The recording phase ends as soon as every check holds; the
# duration bounds it (and is waited out only when close-time queries exist).
DURATION_S, LINGER_S = 20, 6
# Hang guard for waiting on a server, a process or a rule, never a timing
# assertion.
HANG_GUARD_S = 60

# Families written when a process closes its sinks: queried after the
# producers have stopped (while the launcher lingers).
CLOSE_TIME = {"tokenspeed_metrics_reporter_events_discarded_total",
              "tokenspeed_metrics_reporter_sinks_abandoned_total"}
# Families whose series exist only after a fault this run does not cause.
FAULT_ONLY = {"tokenspeed_metrics_reporter_producer_crashes_total":
              "a series appears only with a producer's crash; this run has none"}
# Families the dashboard and rules cover that a build may not define yet (the
# host self-metrics of issue 9). A query on any other absent family fails.
PENDING = {"tokenspeed_metrics_reporter_events_discarded_total",
           "tokenspeed_metrics_reporter_sinks_abandoned_total",
           "tokenspeed_metrics_reporter_producer_crashes_total"}

# Label values the run produces; a legend label outside them fails.
KNOWN_VALUES = {
    "model_name": {MODEL}, "app_key": {APP_KEY}, "dp_rank": RANKS, "reporter": OUTPUTS,
    "reason": {"ring_full", "sink_disabled", "after_close"}, "job": {JOB},
}
# Labels whose every value must appear in a query grouped by them.
COMPLETE_VALUES = {"dp_rank": RANKS, "reporter": OUTPUTS}

METRIC_NAME = re.compile(r"\btokenspeed[a-zA-Z0-9_:]*")
UP_SELECTOR = re.compile(r"\bup\{")
HISTOGRAM_SUFFIX = re.compile(r"_(bucket|sum|count)$")


class QueryError(Exception):
    pass


def api(base, path, params):
    try:
        answer = json.loads(fetch(base + path + "?" + urllib.parse.urlencode(params, doseq=True)))
    except urllib.error.HTTPError as error:
        raise QueryError(f"{path} {params}: HTTP {error.code} {error.read().decode()}") from None
    if answer.get("status") != "success":
        raise RuntimeError(f"{path} {params}: {answer}")
    return answer["data"]


def instant(base, expr):
    return api(base, "/api/v1/query", {"query": expr})["result"]


def metric_names(expr):
    """Families a PromQL expression reads (histogram series by family)."""
    names = set(METRIC_NAME.findall(expr))
    if UP_SELECTOR.search(expr):
        names.add("up")
    return names


def family_of(name):
    return HISTOGRAM_SUFFIX.sub("", name)


def substitute(expr, variables):
    """The expression as Grafana sends it: $__ intervals, then the variables."""
    for name, value in variables.items():
        expr = expr.replace("$" + name, value)
    if "$" in expr:
        raise ValueError(f"unsubstituted variable in {expr}")
    return expr


def grafana_regex_escape(value):
    """A single value as Grafana interpolates it into a Prometheus regex
    matcher: regex metacharacters escaped, the backslash doubled for PromQL."""
    return re.sub(r"[$^*{}\[\]'+?.()|\\]", lambda m: "\\\\" + m.group(0), value)


def shortened_rules(text):
    """The rules file with every range and offset at 10 s and every `for` at 1 s,
    so that a run of seconds exercises windows meant for minutes."""
    text, ranges = re.subn(r"\[\d+[smh]\]", "[10s]", text)
    text, offsets = re.subn(r"offset \d+[smh]", "offset 10s", text)
    text, fors = re.subn(r"for: \d+[smh]", "for: 1s", text)
    if ranges == 0 or fors == 0:
        raise RuntimeError("the rules file has no windows to shorten")
    return text


def check_dashboard_structure(dashboard, failures):
    """Grafana's dashboard JSON: the data source variable, the engine's label
    variables, every panel and target on that data source, unique ids."""
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    source = variables.get("datasource", {})
    if source.get("type") != "datasource" or source.get("query") != "prometheus":
        failures.append("no Prometheus data source variable 'datasource'")
    for name in ("model_name", "app_key", "dp_rank"):
        if variables.get(name, {}).get("type") != "query":
            failures.append(f"no query template variable '{name}'")
    if not isinstance(dashboard.get("schemaVersion"), int) or dashboard["schemaVersion"] < 36:
        failures.append(f"schemaVersion {dashboard.get('schemaVersion')} predates current Grafana")
    ids = [p["id"] for p in dashboard["panels"]]
    if len(ids) != len(set(ids)):
        failures.append(f"panel ids are not unique: {ids}")
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        where = f"panel '{panel['title']}'"
        if panel.get("datasource", {}).get("uid") != "${datasource}":
            failures.append(f"{where}: not on the data source variable")
        refs = [t["refId"] for t in panel.get("targets", [])]
        if not refs or len(refs) != len(set(refs)):
            failures.append(f"{where}: missing or repeated refIds {refs}")
        for target in panel["targets"]:
            if target.get("datasource", {}).get("uid") != "${datasource}":
                failures.append(f"{where} {target['refId']}: not on the data source variable")
        for key in ("x", "y", "w", "h"):
            if not isinstance(panel.get("gridPos", {}).get(key), int):
                failures.append(f"{where}: gridPos.{key} missing")


def legend_labels(legend):
    return set(re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend))


def check_result(result, legend, instance, complete=True):
    """Problems of one query's result; empty when it is data with the labels
    its legend names, valued as in the run (all ranks and outputs when
    complete)."""
    if not result:
        return ["no data"]
    problems = []
    wanted = legend_labels(legend)
    seen = {label: set() for label in wanted}
    for series in result:
        labels = series["metric"]
        value = float(series["value"][1])
        if not math.isfinite(value):
            problems.append(f"value {series['value'][1]} for {labels}")
        for label in wanted:
            if label not in labels:
                problems.append(f"series {labels} lacks label '{label}'")
                continue
            seen[label].add(labels[label])
            known = {"instance": {instance}}.get(label, KNOWN_VALUES.get(label))
            if known is not None and labels[label] not in known:
                problems.append(f"label {label}={labels[label]!r} is not one of {sorted(known)}")
    for label, values in seen.items():
        every = COMPLETE_VALUES.get(label) if complete else None
        if every is not None and values and values != every:
            problems.append(f"label {label} has values {sorted(values)}, expected {sorted(every)}")
    return problems


def run_query(base, expr, legend, instance, complete=True):
    try:
        return check_result(instant(base, expr), legend, instance, complete)
    except QueryError as error:
        return [str(error)]


def grafana_variables(target):
    """Grafana's interval variables for a 1 s scrape interval, and the run's
    selection, formatted as Grafana formats a multi-value regex."""
    return {
        "__rate_interval": "10s", "__interval": "1s", "__range": "1m",
        "instance": grafana_regex_escape(target), "model_name": MODEL, "app_key": APP_KEY,
        "dp_rank": "(" + "|".join(sorted(RANKS)) + ")",
        "reporter": "(" + "|".join(sorted(OUTPUTS)) + ")",
    }


def panel_queries(dashboard):
    """(where, expr, legend) of every panel target."""
    return [(f"panel '{panel['title']}' {t['refId']}", t["expr"], t.get("legendFormat", ""))
            for panel in dashboard["panels"] for t in panel.get("targets", [])]


def variable_queries(dashboard, failures):
    """(name, selector, label) of every label_values() template variable."""
    queries = []
    for v in dashboard["templating"]["list"]:
        if v["type"] != "query":
            continue
        m = re.fullmatch(r"label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)", v["definition"])
        if m:
            queries.append((v["name"], m.group(1), m.group(2)))
        else:
            failures.append(f"variable {v['name']}: not a label_values() query")
    return queries


class Families:
    """Which metric families a query reads, and whether this build defines
    them (their name is in the host library) or the server has them."""

    def __init__(self, host_library):
        with open(host_library, "rb") as f:
            self.library = f.read()

    def defined_by_build(self, family):
        stem = family[:-len("_total")] if family.endswith("_total") else family
        return family == "up" or stem.encode() in self.library

    @staticmethod
    def present(base):
        return {family_of(n) for n in api(base, "/api/v1/label/__name__/values", {})} | {"up"}

    def classify(self, expr, present):
        """("run", None), ("defer", None), ("skip", reason) or ("fail", reason)."""
        families = {family_of(n) for n in metric_names(expr)}
        absent = families - present
        undefined = {f for f in absent if not self.defined_by_build(f)}
        if undefined - PENDING:
            return "fail", f"reads families no build defines: {sorted(undefined - PENDING)}"
        if not absent or "or vector(0)" in expr:
            return "run", None
        if undefined:
            return "skip", f"{sorted(undefined)} not defined by this build (host self-metrics of issue 9)"
        if absent <= set(FAULT_ONLY):
            return "skip", "; ".join(FAULT_ONLY[f] for f in sorted(absent))
        if absent <= CLOSE_TIME:
            return "defer", None
        return "run", None  # absent although defined: the query reports no data


def start_prometheus(prometheus, tmp, target, rules_text):
    """A Prometheus on loopback scraping target every second and evaluating
    the rules, windows shortened, every second. Returns (process, base URL)."""
    short_rules = os.path.join(tmp, "rules.yml")
    with open(short_rules, "w") as f:
        f.write(shortened_rules(rules_text))
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - {short_rules}
scrape_configs:
  - job_name: {JOB}
    static_configs:
      - targets: ['{target}']
""")
    port = free_port()
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    server = subprocess.Popen([prometheus, f"--config.file={config}",
                               f"--storage.tsdb.path={os.path.join(tmp, 'data')}",
                               f"--web.listen-address=127.0.0.1:{port}"],
                              stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def ready():
        if server.poll() is not None:
            raise RuntimeError("prometheus exited before it was ready")
        try:
            fetch(base + "/-/ready", timeout=2)
            return True
        except Exception:
            return False

    if not eventually(ready, HANG_GUARD_S, 0.2):
        raise RuntimeError("prometheus did not become ready")
    return server, base


def loaded_rules(base):
    return {r["name"]: r for g in api(base, "/api/v1/rules", {})["groups"] for r in g["rules"]}


class AlertChecks:
    """The rules as the server runs them, checked at each evaluation of the
    recording phase: every rule healthy; the stall and dropping expressions
    hold for 'stalled', the stall expression never for a healthy output; the
    stall alert fires."""

    def __init__(self):
        self.rules = {}
        self.healthy = self.stall = self.dropping = self.fired = False
        self.healthy_outputs_stalled = set()

    def observe(self, base):
        self.rules = loaded_rules(base)
        self.healthy = self.healthy or bool(self.rules) and all(
            r.get("health") == "ok" for r in self.rules.values())
        stalled = self.rules.get("TokenSpeedMetricsOutputStalled")
        dropping = self.rules.get("TokenSpeedMetricsOutputDroppingEvents")
        if stalled is None or dropping is None:
            return
        reporters = {s["metric"].get("reporter") for s in instant(base, stalled["query"])}
        self.healthy_outputs_stalled |= reporters - {"stalled"}
        self.stall = self.stall or "stalled" in reporters
        self.dropping = self.dropping or "stalled" in {
            s["metric"].get("reporter") for s in instant(base, dropping["query"])}
        self.fired = self.fired or any(
            a["labels"].get("reporter") == "stalled" and a["state"] == "firing"
            for a in stalled.get("alerts", []))

    def done(self):
        return self.healthy and self.stall and self.dropping and self.fired

    def failures(self, rules_text):
        out = []
        if not self.healthy:
            bad = {n: (r.get("health"), r.get("lastError")) for n, r in self.rules.items()
                   if r.get("health") != "ok"}
            out.append(f"rules not loaded or not evaluating cleanly: {bad}")
        missing = set(re.findall(r"(?:alert|record): (\S+)", rules_text)) - set(self.rules)
        if missing:
            out.append(f"the server did not load the rules {sorted(missing)}")
        if not self.stall:
            out.append("the stall alert's expression never held for 'stalled'")
        if self.healthy_outputs_stalled:
            out.append("the stall alert's expression held for healthy outputs "
                       f"{sorted(map(str, self.healthy_outputs_stalled))}")
        if not self.dropping:
            out.append("the dropping alert's expression never held for 'stalled'")
        if not self.fired:
            out.append("TokenSpeedMetricsOutputStalled did not fire for 'stalled'")
        return out


def simulate_arguments(tmp, jsonl_dir, stall_dir):
    config_path = os.path.join(tmp, "reporters.json")
    with open(config_path, "w") as f:
        json.dump({"jsonl": {"path": os.path.join(tmp, "events-{pid}.jsonl")}}, f)
    return ["--ranks", str(len(RANKS)), "--duration", str(DURATION_S),
            "--linger", str(LINGER_S), "--model", MODEL, "--app-key", APP_KEY,
            "--enable-metrics", "--metrics-reporters", "prometheus,jsonl,stalled",
            "--metrics-reporter-config", config_path, "--metrics-plugin-dir", jsonl_dir,
            "--metrics-plugin-dir", stall_dir, "--metrics-port", "0",
            "--metrics-multiproc-dir", os.path.join(tmp, "runs"),
            "--metrics-shutdown-timeout", "1"]


def main():
    prometheus, host_library, dashboard_path, rules_path, jsonl_dir, stall_dir = sys.argv[1:7]
    if not prometheus or not os.path.exists(prometheus):
        skip("prometheus (Debian package prometheus) is not installed")
    with open(dashboard_path) as f:
        dashboard = json.load(f)
    with open(rules_path) as f:
        rules_text = f.read()
    families = Families(host_library)

    failures = []
    check_dashboard_structure(dashboard, failures)
    queries = panel_queries(dashboard)
    var_queries = variable_queries(dashboard, failures)
    outcome = {}   # where -> problems (empty: passed)
    skipped = {}   # where -> reason
    deferred = {}  # where -> (expr, legend): close-time queries
    alerts = AlertChecks()

    tmp = tempfile.TemporaryDirectory(prefix="tsm-observability-")
    simulation = Simulation(simulate_arguments(tmp.name, jsonl_dir, stall_dir))
    server = None
    try:
        target = simulation.metrics_url().split("//", 1)[1].split("/", 1)[0]
        server, base = start_prometheus(prometheus, tmp.name, target, rules_text)
        variables = grafana_variables(target)

        # Phase 1, the run recording: every query until it holds, or one last
        # round once the producers have stopped.
        def recorded():
            stopped = simulation.has_line("producers stopped")
            present = families.present(base)
            for where, expr, legend in queries:
                if outcome.get(where) == [] or where in skipped or where in deferred:
                    continue
                action, reason = families.classify(expr, present)
                if action == "fail":
                    outcome[where] = [reason]
                elif action == "skip":
                    skipped[where] = reason
                elif action == "defer":
                    deferred[where] = (expr, legend)
                else:
                    outcome[where] = run_query(base, substitute(expr, variables), legend, target)
            for name, selector, label in var_queries:
                where = f"variable '{name}'"
                if outcome.get(where) == []:
                    continue
                values = set(api(base, f"/api/v1/label/{label}/values",
                                 {"match[]": substitute(selector, variables)}))
                want = {"instance": {target}}.get(label) or COMPLETE_VALUES.get(label) or \
                    KNOWN_VALUES.get(label)
                outcome[where] = [] if values and (want is None or values == want) else \
                    [f"label values {sorted(values)}, expected {sorted(want or ['some'])}"]
            alerts.observe(base)
            return stopped or (alerts.done() and not any(outcome.values()))

        eventually(recorded, HANG_GUARD_S, 0.5)
        failures += alerts.failures(rules_text)

        # Phase 2, the producers stopped and the launcher lingering: the
        # close-time queries (the run's ranks and outputs need not all appear).
        if deferred:
            simulation.wait_for_line("producers stopped", HANG_GUARD_S)

            def closed_families_answered():
                present = families.present(base)
                for where, (expr, legend) in list(deferred.items()):
                    missing = {family_of(n) for n in metric_names(expr)} - present
                    outcome[where] = [f"no series of {sorted(missing)} after close"] if missing \
                        else run_query(base, substitute(expr, variables), legend, target,
                                       complete=False)
                    if not outcome[where]:
                        del deferred[where]
                return not deferred

            # Bounded by the launcher's linger, while it still serves /metrics.
            eventually(closed_families_answered, LINGER_S - 1, 0.5)

        # Phase 3, the engine gone: the endpoint-down alert fires.
        # The stalled output may make simulate report a failed output through
        # its exit status; that is not this test's subject, a crash is.
        simulation.process.terminate()
        status = simulation.wait(HANG_GUARD_S)
        print(f"simulate exit status {status}")
        if status < 0:
            failures.append(f"simulate was killed by signal {-status}: {simulation.stderr_text}")
        down_expr = down_fired = False

        def endpoint_down_fired():
            nonlocal down_expr, down_fired
            down = loaded_rules(base).get("TokenSpeedMetricsEndpointDown", {})
            down_expr = down_expr or any(s["metric"].get("instance") == target
                                         for s in instant(base, down.get("query", "vector(0)")))
            down_fired = any(a["labels"].get("instance") == target and a["state"] == "firing"
                             for a in down.get("alerts", []))
            return down_expr and down_fired

        eventually(endpoint_down_fired, HANG_GUARD_S, 0.5)
        if not down_expr:
            failures.append("the endpoint-down expression did not hold after the engine exited")
        if not down_fired:
            failures.append("TokenSpeedMetricsEndpointDown did not fire after the engine exited")
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        simulation.kill()
        tmp.cleanup()

    for where, problems in outcome.items():
        print(f"{'ok  ' if not problems else 'FAIL'} {where}" +
              ("" if not problems else ": " + "; ".join(problems[:5])))
        if problems:
            failures.append(f"{where}: {problems[0]}")
    for where, reason in skipped.items():
        print(f"skip {where}: {reason}")
    for failure in failures:
        print(f"FAIL {failure}")
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
