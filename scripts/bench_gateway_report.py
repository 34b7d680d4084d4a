#!/usr/bin/env python3
"""REPORT.md for `make bench-gateway` from results/gateway/runs.jsonl (scripts/bench_gateway.sh).

Every figure is the median over rounds of one front's phase. "added" is the front's latency
minus direct's at the same percentile in the same round (then the median over rounds).
Usage: bench_gateway_report.py RUNS_JSONL TIME_SCALE
"""
import json
import statistics
import sys
from collections import defaultdict

runs = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
time_scale = sys.argv[2] if len(sys.argv) > 2 else "?"
by = defaultdict(dict)  # (front, phase) -> round -> run
for r in runs:
    by[(r["front"], r["phase"])][r["round"]] = r
fronts = list(dict.fromkeys(r["front"] for r in runs))
phases = list(dict.fromkeys(r["phase"] for r in runs))
sat_phases = [p for p in phases if p.startswith("sat-")]


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def field(front, phase, path):
    out = []
    for rnd, r in by[(front, phase)].items():
        v = r
        for k in path:
            v = v.get(k) if isinstance(v, dict) else None
        out.append(v)
    return med(out)


def added(front, phase, path):
    base = by.get(("direct", phase), {})
    out = []
    for rnd, r in by[(front, phase)].items():
        if rnd not in base:
            continue
        a, b = r, base[rnd]
        for k in path:
            a, b = a[k], b[k]
        out.append(a - b)
    return med(out)


def fmt(v, digits=0):
    return "-" if v is None else f"{v:,.{digits}f}"


errors = sum(r["errors"] for r in runs)
rounds = max((r["round"] for r in runs), default=0)
print("# bench-gateway: what each front adds in front of one engine\n")
print(f"One engine-sim at time scale {time_scale}; {rounds} interleaved rounds; medians over "
      f"rounds; {errors} failed requests in all. Latencies in microseconds, wall clock; "
      "\"added\" is the front minus direct in the same round. Command: `make bench-gateway` "
      "(scripts/bench_gateway.sh).\n")
print("## Low load (1 connection)\n")
print("| front | whole p50 | whole p99 | added p50 | added p99 | stream first byte p50 "
      "| first byte p99 | added p50 | added p99 |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
for f in fronts:
    row = [f]
    for phase, key in (("low", "total"), ("low-stream", "first_byte")):
        row += [fmt(field(f, phase, [key, "p50_us"])), fmt(field(f, phase, [key, "p99_us"]))]
        if f == "direct":
            row += ["", ""]
        else:
            row += [fmt(added(f, phase, [key, "p50_us"])), fmt(added(f, phase, [key, "p99_us"]))]
    print("| " + " | ".join(row) + " |")

print("\n## Saturation\n")
head = ["front"]
for p in sat_phases:
    c = p.split("-", 1)[1]
    head += [f"req/s @{c}", f"p50 @{c}", f"p99 @{c}", f"front CPU us/req @{c}"]
head += ["RSS MiB", "peak RSS MiB"]
print("| " + " | ".join(head) + " |")
print("|---" + "|---:" * (len(head) - 1) + "|")
best = {}
for p in sat_phases:
    for f in fronts:
        best[(f, p)] = field(f, p, ["requests_per_s"])
for f in fronts:
    row = [f]
    for p in sat_phases:
        cpu = []
        for r in by[(f, p)].values():
            if r["requests"]:
                cpu.append(1e6 * r["cpu_s"] / (r["requests"] + r["errors"]))
        row += [fmt(best[(f, p)]), fmt(field(f, p, ["total", "p50_us"])),
                fmt(field(f, p, ["total", "p99_us"])),
                "-" if f == "direct" else fmt(med(cpu))]
    last = sat_phases[-1] if sat_phases else "low"
    row += [fmt(field(f, last, ["rss_kib"]) / 1024, 1) if field(f, last, ["rss_kib"]) else "-",
            fmt(field(f, last, ["hwm_kib"]) / 1024, 1) if field(f, last, ["hwm_kib"]) else "-"]
    print("| " + " | ".join(row) + " |")

if "kinference" in fronts and sat_phases:
    print("\n## Kinference's ratios\n")
    for p in sat_phases:
        k = best.get(("kinference", p))
        for other in fronts:
            if other in ("kinference", "direct") or not best.get((other, p)) or not k:
                continue
            print(f"- {p}: kinference / {other} requests/s = {k / best[(other, p)]:.2f}")
print("\nThe direct row's CPU column is empty: the engine is not a front. The engine-sim and "
      "the load tool share CPU 0 and the fronts run on CPU 1 (BENCH_GW_PIN=1), so requests/s "
      "is bounded by the engine and the load tool as well; CPU time per request is the "
      "front's own cost.")
