#!/usr/bin/env python3
"""TTFT prediction error of a `kinference bench` run, split by cache outcome.

Reads the per-request records `kinference bench --out DIR` writes (JSONL, one request per
line with ttft_s, predicted_ttft_s, cached_tokens, start_s, e2e_s) and prints, for all
requests, the cached ones and the cold ones (cached_tokens == 0): observed and predicted
TTFT medians, the median absolute error, the relative error |predicted - observed| /
observed at p50 and p90, and predicted / observed at p10, p50 and p90.

It also prints a noise floor: the relative error of the best constant predictor (the one
value that, known in hindsight, minimises the p90 relative error) over the cached requests
that had no other request of the run in flight when they started. Those requests differ
only in a few suffix tokens, so their spread is the engine's and the machine's own
variation, which no predictor fed TTFTs and scrapes can foresee. (Only meaningful for a
run against one endpoint: "in flight" is taken over the whole run.)

Usage: benchmarks/prediction_error.py RECORDS.jsonl [...]
"""
import json
import sys


def quantile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


def summarise(name, rows):
    if not rows:
        return
    obs = [r["ttft_s"] for r in rows]
    pred = [r["predicted_ttft_s"] for r in rows]
    abs_err = [abs(p - o) for p, o in zip(pred, obs)]
    rel = [abs(p - o) / o for p, o in zip(pred, obs)]
    ratio = [p / o for p, o in zip(pred, obs)]
    print(
        f"  {name:6} n={len(rows):4}  observed p50 {quantile(obs, .5) * 1e3:7.0f} ms"
        f"  predicted p50 {quantile(pred, .5) * 1e3:7.0f} ms"
        f"  abs err p50 {quantile(abs_err, .5) * 1e3:6.0f} ms"
        f"  rel err p50 {quantile(rel, .5):.2f} p90 {quantile(rel, .9):.2f}"
        f"  predicted/observed p10 {quantile(ratio, .1):.2f} p50 {quantile(ratio, .5):.2f}"
        f" p90 {quantile(ratio, .9):.2f}"
    )


def noise_floor(rows):
    alone = []
    for r in rows:
        if r["cached_tokens"] <= 0:
            continue
        busy = any(
            o is not r and o["start_s"] < r["start_s"] < o["start_s"] + o["e2e_s"] for o in rows
        )
        if not busy:
            alone.append(r["ttft_s"])
    if len(alone) < 10:
        return
    lo, hi = min(alone), max(alone)
    best = None
    for i in range(200):
        c = lo + (hi - lo) * i / 199
        p90 = quantile([abs(c - o) / o for o in alone], 0.9)
        if best is None or p90 < best[0]:
            best = (p90, c)
    med = quantile(alone, 0.5)
    med_p90 = quantile([abs(med - o) / o for o in alone], 0.9)
    print(
        f"  noise floor over {len(alone)} cached requests alone in flight: observed p50"
        f" {med * 1e3:.0f} p90 {quantile(alone, .9) * 1e3:.0f} ms; predicting their median:"
        f" rel err p90 {med_p90:.2f}; best constant ({best[1] * 1e3:.0f} ms): rel err p90"
        f" {best[0]:.2f}"
    )


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for path in sys.argv[1:]:
        rows = []
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("error") is None and r.get("predicted_ttft_s") and r.get("ttft_s"):
                    rows.append(r)
        print(path)
        summarise("all", rows)
        summarise("cached", [r for r in rows if r["cached_tokens"] > 0])
        summarise("cold", [r for r in rows if r["cached_tokens"] <= 0])
        noise_floor(rows)


if __name__ == "__main__":
    main()
