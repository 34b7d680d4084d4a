#!/usr/bin/env bash
# `make demo` works from a fresh clone with nothing beside it: clones the repository's
# committed tree into a temp dir and runs scripts/demo.sh there (the Mooncake trace from
# data/traces/, the report script, the plotting venv from ~/.cache) with this build's
# binary and a shortened workload (every strategy and both workloads, fewer requests).
# Fails unless every run finished requests and the summary, table and report were written.
# Usage: demo_fresh_clone_test.sh KINFERENCE_BIN SOURCE_DIR
set -euo pipefail
BIN=$(realpath "$1")
SRC=$2
if ! git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
  echo "FAIL: $SRC is not a git checkout; this test clones it" >&2
  exit 1
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-fresh-clone.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
git clone --quiet "$SRC" "$TMP/clone"
cd "$TMP/clone"
# Nothing outside the clone: no ../shared, no absolute /work paths in what the demo reads.
if grep -nE '\.\./shared|/work/' scripts/demo.sh scripts/plot_bench.py scripts/plot-env.sh; then
  echo "FAIL: the demo refers to files outside the clone" >&2
  exit 1
fi
KINFERENCE_BIN=$BIN DEMO_TIME_SCALE=20 DEMO_TRACE_LIMIT=24 DEMO_SP_SESSIONS=12 DEMO_SP_RATE=0.5 \
  bash scripts/demo.sh >"$TMP/demo.log" 2>&1 || {
  tail -n 60 "$TMP/demo.log"
  echo "FAIL: scripts/demo.sh exited non-zero in a fresh clone" >&2
  exit 1
}
tail -n 20 "$TMP/demo.log"
python3 - results/demo <<'PY'
import json, os, sys
out = sys.argv[1]
runs = json.load(open(os.path.join(out, "summary.json")))["results"]
seen = set()
for r in runs:
    label, strategy = r["label"], r["strategy"]
    done = r["requests"] - r["errors"]
    print(f"{label} / {strategy}: {done} of {r['requests']} requests answered")
    if done <= 0 or r["errors"] > 0:
        sys.exit(f"FAIL: {label} / {strategy}: {r['errors']} errors, {done} answered")
    seen.add((label, strategy))
want = {(l, s) for l in ("mooncake-trace", "shared-prefix") for s in ("random", "predicted-ttft")}
if seen != want:
    sys.exit(f"FAIL: runs {sorted(seen)}, expected {sorted(want)}")
if not os.path.getsize(os.path.join(out, "REPORT.md")):
    sys.exit("FAIL: empty REPORT.md")
print("fresh-clone demo: ok")
PY
