#!/usr/bin/env python3
"""The Grafana dashboard and the Prometheus rules against a real Prometheus.

Starts two engine-sims and a gateway in front of them (loopback, free ports), puts load
on the gateway with `kinference bench`, starts Debian's Prometheus scraping the gateway
(job kinference-gateway) and the engines (job vllm) every second with
deploy/prometheus/kinference-rules.yaml loaded, and then, while the load runs:
  - evaluates every query of deploy/grafana/kinference.json through Prometheus's HTTP API
    (variables: $__rate_interval -> 20s, $model -> .*): each must parse and return at
    least one series with a finite value;
  - queries every recording rule's series (each must return data) and checks that every
    rule evaluates without error (/api/v1/rules health "ok").
Also: the JSON (and the Helm chart's copy) equals deploy/grafana/dashboard.py's output,
`promtool check rules` and
`promtool test rules` pass, and `promtool check config` accepts the scrape config.

Usage: dashboard_test.py KINFERENCE_BIN SOURCE_DIR
Every process started here is stopped by its PID at the end. Standard library only.
"""
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

BIN, SRC = sys.argv[1], sys.argv[2]
DASHBOARD = os.path.join(SRC, "deploy/grafana/kinference.json")
RULES = os.path.join(SRC, "deploy/prometheus/kinference-rules.yaml")
RULES_TEST = os.path.join(SRC, "deploy/prometheus/kinference-rules.test.yaml")
MODEL = "google/gemma-3-27b-it"
TIME_SCALE = 5
VARIABLES = {"$__rate_interval": "20s", "${__rate_interval}": "20s", "$model": ".*",
             "${model}": ".*"}

procs = []
failures = []


def log(msg):
    print(msg, flush=True)


def fail(msg):
    failures.append(msg)
    log("FAIL " + msg)


def start(argv, stdout_path, ready=None, timeout=60):
    """Starts argv (stdout to a file); with `ready`, waits for a line matching it and
    returns its last number (a port)."""
    out = open(stdout_path, "w")
    p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    procs.append(p)
    if ready is None:
        return p, None
    deadline = time.time() + timeout
    while time.time() < deadline:
        with open(stdout_path) as f:
            for line in f:
                if ready in line:
                    return p, int(re.findall(r"(\d+)\s*$", line.strip())[0])
        if p.poll() is not None:
            break
        time.sleep(0.1)
    with open(stdout_path) as f:
        sys.exit(f"{argv[0]} {argv[1]} did not start:\n{f.read()}")


def stop_all():
    for p in reversed(procs):
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in reversed(procs):
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.load(r)


def query(prom, expr):
    """(error or None, result list) of an instant query."""
    url = f"{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    try:
        doc = get_json(url)
    except urllib.error.HTTPError as e:  # 400: the query does not parse
        try:
            return json.load(e).get("error", str(e)), []
        except ValueError:
            return str(e), []
    if doc.get("status") != "success":
        return doc.get("error", "status " + str(doc.get("status"))), []
    return None, doc["data"]["result"]


def finite(series):
    try:
        return math.isfinite(float(series["value"][1]))
    except (KeyError, ValueError, IndexError):
        return False


def substitute(expr):
    for k, v in sorted(VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(k, v)
    if "$" in expr:
        raise ValueError(f"unknown dashboard variable in {expr}")
    return expr


def dashboard_targets(doc):
    for panel in doc["panels"]:
        for sub in [panel] + panel.get("panels", []):
            for t in sub.get("targets", []):
                yield sub["title"], t["expr"]


def run_promtool(*args):
    r = subprocess.run(["promtool", *args], capture_output=True, text=True)
    log(f"promtool {' '.join(args)}: rc={r.returncode}\n{(r.stdout + r.stderr).strip()}")
    return r.returncode == 0


def main():
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            sys.exit(f"{tool} not found: scripts/install-deps.sh installs Debian's prometheus")
    tmp = tempfile.mkdtemp(prefix="kinference-dashboard-")
    try:
        # The committed JSON is the generator's output.
        gen = subprocess.run([sys.executable, os.path.join(SRC, "deploy/grafana/dashboard.py")],
                             capture_output=True, text=True, check=True).stdout
        with open(DASHBOARD) as f:
            if f.read() != gen:
                fail("deploy/grafana/kinference.json differs from dashboard.py's output; "
                     "regenerate it")
        # The Helm chart ships a copy (.Files cannot reach outside the chart).
        with open(os.path.join(SRC, "deploy/helm/kinference/dashboards/kinference.json")) as f:
            if f.read() != gen:
                fail("deploy/helm/kinference/dashboards/kinference.json differs from "
                     "dashboard.py's output; copy deploy/grafana/kinference.json there")
        if not run_promtool("check", "rules", RULES):
            fail("promtool check rules")
        if not run_promtool("test", "rules", RULES_TEST):
            fail("promtool test rules")

        engines = []
        for i in range(2):
            _, port = start([BIN, "engine-sim", "--port", "0", "--time-scale", str(TIME_SCALE),
                             "--engine-label", f"engine{i}"], os.path.join(tmp, f"engine{i}.log"),
                            "engine-sim listening on")
            engines.append(f"127.0.0.1:{port}")
        os.makedirs(os.path.join(tmp, "policies"))
        with open(os.path.join(tmp, "policies", "local-only.yaml"), "w") as f:
            f.write(f"""apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {{name: local-only}}
spec:
  mode: enforce
  match: {{models: ["{MODEL}"]}}
  constraints: {{exclude: {{classes: [provider]}}}}
  onNoCandidate: reject
""")
        with open(os.path.join(tmp, "gateway.yaml"), "w") as f:
            f.write(f"""listen: {{address: 127.0.0.1, port: 0}}
strategy: predicted-ttft
scrape_interval_s: 1.0
time_scale: {TIME_SCALE}
pools:
  - name: sim
    model: {MODEL}
    endpoints: [{", ".join("http://" + e for e in engines)}]
policies: {{files: [policies/local-only.yaml]}}
accounting:
  ledger: {{store: none}}
  prices: [{{model: "*", input: 0.10, cached_input: 0.01, output: 0.40}}]
""")
        _, gw_port = start([BIN, "gateway", "--config", os.path.join(tmp, "gateway.yaml")],
                           os.path.join(tmp, "gateway.log"), "gateway listening on")
        gateway = f"127.0.0.1:{gw_port}"

        prom_config = os.path.join(tmp, "prometheus.yml")
        with open(prom_config, "w") as f:
            f.write(f"""global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: ["{RULES}"]
scrape_configs:
  - job_name: kinference-gateway
    static_configs: [{{targets: ["{gateway}"]}}]
  - job_name: vllm
    static_configs: [{{targets: [{", ".join('"' + e + '"' for e in engines)}]}}]
""")
        if not run_promtool("check", "config", prom_config):
            fail("promtool check config")
        # Load first, so the gateway's series exist when Prometheus starts scraping:
        # shared-prefix, short prompts, open loop, bounded (stopped below if still running).
        start([BIN, "bench", "--target", "http://" + gateway, "--workload", "shared-prefix",
               "--sessions", "900", "--rate", "1", "--time-scale", str(TIME_SCALE),
               "--prefixes", "4", "--prefix-tokens", "1000", "--suffix-tokens", "100",
               "--output-tokens", "24", "--model", MODEL, "--strategy", "predicted-ttft"],
              os.path.join(tmp, "bench.log"))
        prom = None
        for _ in range(5):  # the free port may be taken before Prometheus binds it
            port = free_port()
            p, _ = start(["prometheus", f"--config.file={prom_config}",
                          f"--storage.tsdb.path={os.path.join(tmp, 'tsdb')}",
                          f"--web.listen-address=127.0.0.1:{port}"],
                         os.path.join(tmp, f"prometheus-{port}.log"))
            deadline = time.time() + 60
            while time.time() < deadline and p.poll() is None:
                try:
                    urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2)
                    prom = f"http://127.0.0.1:{port}"
                    break
                except OSError:
                    time.sleep(0.5)
            if prom:
                break
        if not prom:
            sys.exit("prometheus did not become ready")
        log(f"prometheus {prom} scraping gateway {gateway} and engines {', '.join(engines)}")

        with open(DASHBOARD) as f:
            targets = [(title, substitute(expr)) for title, expr in
                       dashboard_targets(json.load(f))]
        records = re.findall(r"^\s*- record:\s*(\S+)", open(RULES).read(), re.M)
        pending = [("dashboard", t, e) for t, e in targets] + \
                  [("recording rule", r, r) for r in records]
        # Data arrives with scrapes and rule evaluations: retry until every query has it.
        deadline = time.time() + 240
        results = {}
        while pending and time.time() < deadline:
            still = []
            for kind, title, expr in pending:
                err, series = query(prom, expr)
                if err:
                    results[expr] = (kind, title, f"error: {err}")
                    continue  # does not parse or evaluate: no point retrying
                good = [s for s in series if finite(s)]
                if good:
                    results[expr] = (kind, title, f"ok, {len(good)} series")
                else:
                    results[expr] = (kind, title, "no data")
                    still.append((kind, title, expr))
            pending = still
            if pending:
                time.sleep(2)
        for expr, (kind, title, verdict) in results.items():
            line = f"{verdict:<16} {kind}: {title}: {expr}"
            if verdict.startswith("ok"):
                log("ok   " + line)
            else:
                fail(line)
        rules = get_json(f"{prom}/api/v1/rules")["data"]["groups"]
        for g in rules:
            for r in g["rules"]:
                if r.get("health") != "ok":
                    fail(f"rule {r['name']} health {r.get('health')}: {r.get('lastError')}")
        n_rules = sum(len(g["rules"]) for g in rules)
        log(f"{len(targets)} dashboard queries and {len(records)} recording rules evaluated; "
            f"{n_rules} rules loaded")
    finally:
        stop_all()
        if failures:
            for name in sorted(os.listdir(tmp)):
                if name.endswith(".log"):
                    with open(os.path.join(tmp, name)) as f:
                        tail = f.read()[-3000:]
                    log(f"--- {name} (tail)\n{tail}")
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        log(f"{len(failures)} failure(s)")
        sys.exit(1)
    log("dashboard test: all queries returned data")


if __name__ == "__main__":
    main()
