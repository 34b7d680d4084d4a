#!/usr/bin/env python3
"""Report for `kinference bench` runs (e.g. `make demo`'s results/demo): DIR/REPORT.md with
the results table and, when matplotlib is importable, plots beside it as PNG and SVG:
  - TTFT CDF per strategy, one figure per workload label;
  - requests in flight per endpoint over time, one panel per strategy, per workload label;
  - goodput vs concurrency per strategy, for a workload run at two or more --concurrency
    values (goodput: requests whose TTFT met --slo, per minute of the run);
  - requests served per replica, one group per front, per workload, when DIR/split.jsonl
    exists (make bench-peers: lines {"workload", "front", "requests_per_replica": [...]}).
Records without an endpoint (a peer router does not say where it sent a request) are left
out of the per-endpoint load plot; the replica split covers them.

Usage: plot_bench.py DIR [--slo SECONDS] [--report NAME]
Reads DIR/summary.json (bench --summary) and DIR/requests/<label>_<strategy>.jsonl
(bench --out DIR/requests). Times are model seconds, as bench reports them. Writes
DIR/NAME (default REPORT.md).
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_plots  # noqa: E402

# Default TTFT threshold for goodput: the published Kinference benchmark's shared-prefix
# capacity SLO (8 s; src/sim/scenarios.h kSharedPrefixSloS).
DEFAULT_SLO_S = 8.0


def fmt_s(v):
    return "-" if v is None else f"{v:.2f} s"


def row_label(r):
    return r.get("label") or r["workload"]


def table(rows, header):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def records_of(results_dir, r):
    path = os.path.join(results_dir, "requests", f"{row_label(r)}_{r['strategy']}.jsonl")
    return report_plots.read_jsonl(path) if os.path.exists(path) else None


def goodput_rpm(records, duration_s, slo_s):
    if not records or not duration_s:
        return None
    met = sum(1 for x in records if x.get("error") is None and x.get("ttft_s") is not None
              and x["ttft_s"] <= slo_s)
    return 60.0 * met / duration_s


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--slo", type=float, default=DEFAULT_SLO_S,
                    help="TTFT threshold for goodput, model seconds")
    ap.add_argument("--report", default="REPORT.md", help="report file name inside DIR")
    args = ap.parse_args()
    with open(os.path.join(args.dir, "summary.json")) as f:
        results = json.load(f).get("results", [])
    if not results:
        sys.exit(f"plot_bench: {args.dir}/summary.json has no results")

    lines = ["# Kinference bench results", "",
             f"`kinference bench` runs summarised from {args.dir}/summary.json; times are "
             "model seconds (wall seconds x the servers' time scale).", ""]
    rows = []
    for r in results:
        rows.append([row_label(r), r["strategy"], r.get("concurrency") or "open loop",
                     r["requests"], r["errors"], fmt_s(r.get("ttft_p50_s")),
                     fmt_s(r.get("ttft_p90_s")), fmt_s(r.get("ttft_p99_s")),
                     fmt_s(r.get("itl_p50_s")), fmt_s(r.get("e2e_p50_s")),
                     f"{100 * (r.get('cached_token_ratio') or 0):.1f}%",
                     f"{r.get('throughput_rps') or 0:.3f}"])
    lines.append(table(rows, ["workload", "strategy", "concurrency", "requests", "errors",
                              "TTFT p50", "TTFT p90", "TTFT p99", "ITL p50", "e2e p50",
                              "cached", "req/s"]))
    lines.append("")

    plt = report_plots.pyplot()
    made = []
    if plt is not None:
        labels = []
        for r in results:
            if row_label(r) not in labels:
                labels.append(row_label(r))
        for label in labels:
            runs = [(r, records_of(args.dir, r)) for r in results if row_label(r) == label]
            runs = [(r, recs) for r, recs in runs if recs is not None]
            if not runs:
                continue
            # Runs of one label at several concurrencies: the CDF and load of each.
            def name(r):
                c = r.get("concurrency")
                return r["strategy"] + (f" c={c}" if c and len({x.get('concurrency')
                                                                 for x, _ in runs}) > 1 else "")
            made.append(report_plots.ttft_cdf(
                plt, args.dir, f"ttft_cdf_{label}", f"{label}: TTFT CDF per strategy",
                [(name(r), report_plots.ttft_values(recs)) for r, recs in runs]))
            routed = [(name(r), recs) for r, recs in runs
                      if any(x.get("endpoint") for x in recs)]
            if routed:
                made.append(report_plots.endpoint_load_plot(
                    plt, args.dir, f"endpoint_load_{label}",
                    f"{label}: requests in flight per endpoint", routed))
        for workload in sorted({r["workload"] for r in results}):
            rs = [r for r in results if r["workload"] == workload and r.get("concurrency")]
            if len({r["concurrency"] for r in rs}) < 2:
                continue
            series = {}
            for r in rs:
                series.setdefault(r["strategy"], []).append(
                    (r["concurrency"], goodput_rpm(records_of(args.dir, r), r.get("duration_s"),
                                                   args.slo)))
            made.append(report_plots.goodput_plot(
                plt, args.dir, f"goodput_{workload}",
                f"{workload}: goodput (TTFT <= {args.slo:g} s) vs concurrency",
                sorted(series.items())))
    split_path = os.path.join(args.dir, "split.jsonl")
    splits = report_plots.read_jsonl(split_path) if os.path.exists(split_path) else []
    if splits:
        lines += ["## Requests served per replica", ""]
        lines.append(table([[d["workload"], d["front"], d["requests_per_replica"]]
                            for d in splits], ["workload", "front", "per replica"]))
        lines.append("")
    if plt is not None:
        for workload in sorted({d["workload"] for d in splits}):
            made.append(report_plots.split_plot(
                plt, args.dir, f"replica_split_{workload}",
                f"{workload}: requests served per replica",
                [(d["front"], d["requests_per_replica"]) for d in splits
                 if d["workload"] == workload]))
    if made:
        lines += ["## Plots", "", "Each as PNG (linked) and SVG beside it.", ""]
        lines += [f"![{m}]({m})" for m in made] + [""]
    else:
        lines += ["(Plots skipped: matplotlib is not importable; scripts/plot-env.sh makes a "
                  "venv with it.)", ""]
    out = os.path.join(args.dir, args.report)
    with open(out, "w") as f:
        f.write("\n".join(lines))
    print(f"wrote {out}" + (f" and {len(made)} plots" if made else ""))


if __name__ == "__main__":
    main()
