#!/usr/bin/env python3
"""Side-by-side report of GuideLLM and kinference bench runs (scripts/bench-guidellm.sh).

Usage: guidellm_report.py OUT_DIR RATE CONCURRENCY
Reads OUT_DIR/{poisson,concurrent}-guidellm.json (GuideLLM's JSON report) and
OUT_DIR/{poisson,concurrent}-kinference.json (kinference bench --summary), writes
OUT_DIR/summary.json ({"results": [...]}, one object per tool and profile, times in seconds)
and prints a Markdown table. sent/s: requests sent per second between the first and the
last send (the load actually offered); req/s: each tool's own throughput figure (GuideLLM:
the mean of its requests-per-second series; kinference bench: successes / duration).
"""
import json
import os
import sys


def guidellm_row(path, profile):
    b = json.load(open(path))["benchmarks"][0]
    m = b["metrics"]

    def pct(name, p, scale):
        v = m[name]["successful"]["percentiles"].get(p)
        return None if v is None else v * scale

    totals = m["request_totals"]
    starts = sorted(r["request_start_time"] for r in b["requests"]["successful"])
    return {
        "tool": "guidellm", "profile": profile,
        "requests": totals["total"], "errors": totals["errored"] + totals["incomplete"],
        "ttft_p50_s": pct("time_to_first_token_ms", "p50", 1e-3),
        "ttft_p90_s": pct("time_to_first_token_ms", "p90", 1e-3),
        "ttft_p99_s": pct("time_to_first_token_ms", "p99", 1e-3),
        "itl_p50_s": pct("inter_token_latency_ms", "p50", 1e-3),
        "e2e_p50_s": pct("request_latency", "p50", 1.0),
        "prompt_tokens_mean": m["prompt_token_count"]["successful"]["mean"],
        "throughput_rps": m["requests_per_second"]["successful"]["mean"],
        "offered_rps": offered(starts),
    }


def offered(starts):
    """Requests sent per second between the first and the last send."""
    if len(starts) < 2 or starts[-1] <= starts[0]:
        return None
    return (len(starts) - 1) / (starts[-1] - starts[0])


def kinference_row(path, requests_path, profile):
    r = json.load(open(path))["results"][0]
    starts = []
    if os.path.exists(requests_path):
        with open(requests_path) as f:
            starts = sorted(json.loads(line)["start_s"] for line in f if line.strip())
    ok = r["requests"] - r["errors"]
    return {
        "tool": "kinference-bench", "profile": profile,
        "requests": r["requests"], "errors": r["errors"],
        "ttft_p50_s": r["ttft_p50_s"], "ttft_p90_s": r["ttft_p90_s"],
        "ttft_p99_s": r["ttft_p99_s"], "itl_p50_s": r["itl_p50_s"], "e2e_p50_s": r["e2e_p50_s"],
        "prompt_tokens_mean": r["prompt_tokens"] / ok if ok else None,
        "throughput_rps": r["throughput_rps"],
        "cached_token_ratio": r["cached_token_ratio"],
        "offered_rps": offered(starts),
    }


def fmt(v, unit="s"):
    if v is None:
        return "-"
    if unit == "s":
        return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"
    return f"{v:.2f}"


def main():
    out, rate, conc = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = []
    for kind, profile in (("poisson", f"poisson@{rate}"), ("concurrent", f"concurrent@{conc}")):
        gl = os.path.join(out, f"{kind}-guidellm.json")
        kb = os.path.join(out, f"{kind}-kinference.json")
        if os.path.exists(gl):
            rows.append(guidellm_row(gl, profile))
        if os.path.exists(kb):
            rows.append(kinference_row(
                kb, os.path.join(out, "requests", f"{kind}_predicted-ttft.jsonl"), profile))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"results": rows}, f, indent=1)
    print("| profile | tool | requests | errors | TTFT p50 | TTFT p90 | TTFT p99 | ITL p50 "
          "| E2E p50 | prompt tokens | sent/s | req/s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['profile']} | {r['tool']} | {r['requests']} | {r['errors']} "
              f"| {fmt(r['ttft_p50_s'])} | {fmt(r['ttft_p90_s'])} | {fmt(r['ttft_p99_s'])} "
              f"| {fmt(r['itl_p50_s'])} | {fmt(r['e2e_p50_s'])} "
              f"| {fmt(r['prompt_tokens_mean'], '')} | {fmt(r['offered_rps'], '')} "
              f"| {fmt(r['throughput_rps'], '')} |")


if __name__ == "__main__":
    main()
