#!/usr/bin/env bash
# bench-sim: builds kinference, runs every `kinference simulate` scenario for every
# strategy (virtual time, no GPU, no sockets), writes results/sim/<scenario>.json and
# results/sim/REPORT.md (our figures beside the published Kinference benchmark), plus
# plots when matplotlib is available (a .venv with matplotlib is used when present;
# PLOTS=1 creates one with pip).
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
  --jobs "$JOBS" --out "$OUT" --trace "$TRACE" | tee "$OUT/simulate.log"
echo "bench-sim: simulations took $(( $(date +%s) - start )) s wall"

PY=python3
if [[ "${PLOTS:-0}" == 1 && ! -x .venv/bin/python ]]; then
  python3 -m venv .venv && .venv/bin/pip install --quiet matplotlib || true
fi
if [[ -x .venv/bin/python ]] && .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
  PY=.venv/bin/python
fi
"$PY" scripts/plot_sim.py "$OUT"
