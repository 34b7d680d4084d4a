#!/usr/bin/env python3
"""The report scripts make their plots from real runs.

- scripts/plot_bench.py: `kinference bench` against a real engine-sim at two concurrencies
  (labels sp-c1, sp-c2); REPORT.md must link a TTFT CDF, a per-endpoint load plot and a
  goodput-vs-concurrency plot, each written as a PNG and an SVG that parse as such.
- scripts/plot_sim.py: `kinference simulate` (ad-hoc shared-prefix run, random and
  predicted-ttft, with --records); REPORT.md must link the per-endpoint load plot.
Also: `bench` draws a progress line on a terminal and is quiet when stderr is not one.

Usage: plot_report_test.py KINFERENCE_BIN SOURCE_DIR
Python with matplotlib comes from scripts/plot-env.sh (cached venv); the test fails, not
skips, without it.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

BIN, SRC = sys.argv[1], sys.argv[2]
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg, flush=True)
    if not cond:
        failures.append(msg)


def check_plot(folder, png):
    stem = png[:-4]
    with open(os.path.join(folder, png), "rb") as f:
        check(f.read(8) == b"\x89PNG\r\n\x1a\n", f"{png} is a PNG")
    with open(os.path.join(folder, stem + ".svg")) as f:
        check("<svg" in f.read(4096), f"{stem}.svg is an SVG")


def linked_plots(report):
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", report)


def main():
    env_py = subprocess.run(["bash", os.path.join(SRC, "scripts/plot-env.sh")],
                            capture_output=True, text=True)
    if env_py.returncode != 0:
        sys.exit("scripts/plot-env.sh failed (no matplotlib venv):\n" + env_py.stderr)
    py = env_py.stdout.strip().splitlines()[-1]
    tmp = tempfile.mkdtemp(prefix="kinference-plots-")
    engine = None
    try:
        log = open(os.path.join(tmp, "engine.log"), "w")
        engine = subprocess.Popen([BIN, "engine-sim", "--port", "0", "--time-scale", "50"],
                                  stdout=log, stderr=subprocess.STDOUT)
        port = None
        for _ in range(600):
            m = re.search(r"engine-sim listening on [\d.]+:(\d+)",
                          open(os.path.join(tmp, "engine.log")).read())
            if m:
                port = m.group(1)
                break
            if engine.poll() is not None:
                break
            time.sleep(0.1)
        if not port:
            sys.exit("engine-sim did not start: " + open(os.path.join(tmp, "engine.log")).read())
        out = os.path.join(tmp, "bench")
        for conc in ("1", "2"):
            r = subprocess.run(
                [BIN, "bench", "--target", f"http://127.0.0.1:{port}", "--workload",
                 "shared-prefix", "--sessions", "6", "--concurrency", conc, "--time-scale",
                 "50", "--prefixes", "2", "--prefix-tokens", "500", "--suffix-tokens", "50",
                 "--output-tokens", "8", "--label", f"sp-c{conc}", "--summary",
                 os.path.join(out, "summary.json"), "--out", os.path.join(out, "requests")],
                capture_output=True, text=True, stdin=subprocess.DEVNULL)
            check(r.returncode == 0, f"bench c={conc} exits 0 ({r.stderr[-300:]})")
            check("\r" not in r.stderr and "requests/s" not in r.stderr,
                  "bench prints no progress line when stderr is not a terminal")
        # On a terminal (a pty from util-linux's `script`): a progress line, ended by the
        # final "took" state.
        r = subprocess.run(
            ["script", "-qec", f"'{BIN}' bench --target http://127.0.0.1:{port} --workload "
             "shared-prefix --sessions 4 --concurrency 2 --time-scale 50 --prefixes 1 "
             "--prefix-tokens 200 --suffix-tokens 20 --output-tokens 4", "/dev/null"],
            capture_output=True, stdin=subprocess.DEVNULL)  # bytes: keep the \r
        tty = r.stdout.decode(errors="replace")
        check(r.returncode == 0 and "\rbench: 4/4 requests (100%)" in tty and ", took " in tty,
              f"bench draws a progress line on a terminal ({tty[-400:]!r})")
        # One label per concurrency; the goodput plot needs one workload at two
        # concurrencies, which it has (workload shared-prefix).
        r = subprocess.run([py, os.path.join(SRC, "scripts/plot_bench.py"), out],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"plot_bench.py exits 0 ({r.stdout}{r.stderr})")
        report = open(os.path.join(out, "REPORT.md")).read()
        plots = linked_plots(report)
        for want in ("ttft_cdf_sp-c1.png", "goodput_shared-prefix.png"):
            check(want in plots, f"bench REPORT.md links {want} (links: {plots})")
        # Straight to engine-sim, no record names an endpoint: no empty load plot.
        check("endpoint_load_sp-c1.png" not in plots,
              f"bench REPORT.md has no per-endpoint plot without endpoints (links: {plots})")
        for p in plots:
            check_plot(out, p)
        check("| sp-c2 | direct | 2 | 6 | 0 |" in report,
              "bench REPORT.md has the c=2 row with 6 requests, 0 errors")

        # make bench-peers: a peer router's records name no endpoint, and split.jsonl
        # says where requests went; the report goes to another file name.
        peer = os.path.join(out, "requests", "sp-c1_peer-router.jsonl")
        with open(os.path.join(out, "requests", "sp-c1_direct.jsonl")) as src, \
                open(peer, "w") as dst:
            for line in src:
                rec = json.loads(line)
                rec.pop("endpoint", None)
                dst.write(json.dumps(rec) + "\n")
        summary = json.load(open(os.path.join(out, "summary.json")))
        row = dict(next(r for r in summary["results"] if r.get("label") == "sp-c1"))
        row["strategy"] = "peer-router"
        summary["results"].append(row)
        json.dump(summary, open(os.path.join(out, "summary.json"), "w"))
        with open(os.path.join(out, "split.jsonl"), "w") as f:
            f.write('{"workload":"shared-prefix","front":"direct","requests_per_replica":[6]}\n')
            f.write('{"workload":"shared-prefix","front":"peer-router",'
                    '"requests_per_replica":[2,4]}\n')
        r = subprocess.run([py, os.path.join(SRC, "scripts/plot_bench.py"), out, "--report",
                            "PEERS.md"], capture_output=True, text=True)
        check(r.returncode == 0, f"plot_bench.py on peer rows exits 0 ({r.stdout}{r.stderr})")
        peers = open(os.path.join(out, "PEERS.md")).read()
        plots = linked_plots(peers)
        check("replica_split_shared-prefix.png" in plots,
              f"PEERS.md links the replica split plot (links: {plots})")
        check("| shared-prefix | peer-router | [2, 4] |" in peers,
              "PEERS.md tables the requests per replica")
        for p in plots:
            check_plot(out, p)

        sim = os.path.join(tmp, "sim")
        r = subprocess.run([BIN, "simulate", "--workload", "shared-prefix", "--requests", "12",
                            "--rate", "0.5", "--replicas", "2", "--strategies",
                            "random,predicted-ttft", "--trials", "1", "--out", sim, "--records",
                            os.path.join(sim, "records"), "--quiet"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
        check(r.returncode == 0, f"simulate exits 0 ({r.stderr[-300:]})")
        recs = os.listdir(os.path.join(sim, "records", "custom"))
        check(sorted(recs) == ["shared-prefix_rate=0.5_predicted-ttft.jsonl",
                               "shared-prefix_rate=0.5_random.jsonl"],
              f"simulate --records writes one JSONL per strategy ({recs})")
        r = subprocess.run([py, os.path.join(SRC, "scripts/plot_sim.py"), sim],
                           capture_output=True, text=True)
        check(r.returncode == 0, f"plot_sim.py exits 0 ({r.stdout}{r.stderr})")
        plots = linked_plots(open(os.path.join(sim, "REPORT.md")).read())
        check("endpoint_load_custom_shared-prefix.png" in plots,
              f"sim REPORT.md links the per-endpoint load plot ({plots})")
        for p in plots:
            check_plot(sim, p)
    finally:
        if engine and engine.poll() is None:
            engine.send_signal(signal.SIGTERM)
            engine.wait(timeout=15)
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        sys.exit(f"{len(failures)} failure(s)")


if __name__ == "__main__":
    main()
