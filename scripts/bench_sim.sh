#!/usr/bin/env bash
# bench-sim: builds kinference, runs every `kinference simulate` scenario for every
# strategy (virtual time, no GPU, no sockets), writes results/sim/<scenario>.json and
# results/sim/REPORT.md (our figures beside the published Kinference benchmark), plus
# plots beside it (PNG and SVG; matplotlib from scripts/plot-env.sh's cached venv; PLOTS=0
# skips them). Per-request records of each run's first trial: results/sim/records/.
#
# Env: BUILD (build dir, default build), JOBS (build and simulation threads, default 2),
# TRIALS (default 3), SEED (default 1), OUT (default results/sim), TRACE (Mooncake JSONL,
# default data/traces/mooncake_conversation_trace.jsonl), SCENARIOS (default all).
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
JOBS=${JOBS:-2}
TRIALS=${TRIALS:-3}
SEED=${SEED:-1}
OUT=${OUT:-results/sim}
TRACE=${TRACE:-data/traces/mooncake_conversation_trace.jsonl}
SCENARIOS=${SCENARIOS:-all}

if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$BUILD" --target kinference -j "$JOBS"

mkdir -p "$OUT"
start=$(date +%s)
"$BUILD/kinference" simulate --scenario "$SCENARIOS" --trials "$TRIALS" --seed "$SEED" \
  --jobs "$JOBS" --out "$OUT" --trace "$TRACE" --records "$OUT/records" | tee "$OUT/simulate.log"
echo "bench-sim: simulations took $(( $(date +%s) - start )) s wall"

PY=python3
if [[ "${PLOTS:-1}" != 0 ]]; then
  PY=$(bash scripts/plot-env.sh) || { echo "bench-sim: no plotting venv; report without plots" >&2; PY=python3; }
fi
"$PY" scripts/plot_sim.py "$OUT"
