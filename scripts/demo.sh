#!/usr/bin/env bash
# Kinference demo (`make demo`): the main job on real input, on one machine without GPUs.
#
# Starts three simulated vLLM replicas (engine-sim, profile l40s-27b-fp8, K times faster
# than real time) and the gateway in front of them, then replays
#   1. a slice of the Mooncake conversation trace (real arrival times and prefix sharing,
#      slowed so that three replicas are busy but not saturated), and
#   2. the shared-prefix workload (24 prefixes of 16,000 tokens, open-loop Poisson),
# each once through the `random` strategy and once through `predicted-ttft`. Engine-sims
# and gateway are restarted before every run, so every strategy starts with cold caches.
# Results: results/demo/summary.json (one object per workload x strategy, model seconds),
# results/demo/requests/*.jsonl (one line per request), a side-by-side table, and
# results/demo/REPORT.md with plots beside it (scripts/plot_bench.py).
#
# Run from the repository root after `make build`. Knobs (environment): BUILD (build dir),
# DEMO_TIME_SCALE (K), DEMO_TRACE_SAMPLE, DEMO_TRACE_LIMIT, DEMO_TRACE_SPEED, DEMO_SP_SESSIONS, DEMO_SP_RATE.
# All processes started here are stopped on exit.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
BIN=${KINFERENCE_BIN:-$BUILD/kinference}
PROFILE=l40s-27b-fp8
# K: model seconds per wall second. At K=20 the four runs took 196 s wall on the 2-core
# dev machine while it was also compiling (load average ~7); the demo prints its wall time.
# Higher K is faster but wall-clock jitter (x K) starts to show in model-time results.
K=${DEMO_TIME_SCALE:-20}
TRACE=${DEMO_TRACE:-data/traces/mooncake_conversation_trace.jsonl}
# Mooncake slice: from line `offset`, one conversation in TRACE_SAMPLE (whole
# conversations, so multi-turn prefix reuse stays as in the trace), `limit` requests.
# The trace averages 3.4 requests/s with 12,035-token prompts, about ten times what three
# L40S replicas carry; sampling 1 in 16 conversations gives ~0.2 requests/s at speed 1,
# and `speed` then sets the load (arrival times divided by it).
TRACE_OFFSET=${DEMO_TRACE_OFFSET:-0}
TRACE_SAMPLE=${DEMO_TRACE_SAMPLE:-16}
TRACE_LIMIT=${DEMO_TRACE_LIMIT:-200}
TRACE_SPEED=${DEMO_TRACE_SPEED:-1.5}
TRACE_MAX_OUT=${DEMO_TRACE_MAX_OUT:-256}
SP_SESSIONS=${DEMO_SP_SESSIONS:-150}
SP_RATE=${DEMO_SP_RATE:-0.2}
STRATEGIES=${DEMO_STRATEGIES:-"random predicted-ttft"}
OUT=results/demo

if [[ ! -x $BIN ]]; then
  echo "demo: $BIN not found; run 'make build' first" >&2
  exit 1
fi
if [[ ! -r $TRACE ]]; then
  echo "demo: trace $TRACE not readable" >&2
  exit 1
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-demo.XXXXXX")
PIDS=()

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  PIDS=()
}
cleanup() {
  stop_all
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# wait_listening NAME LOG PID: waits for "<NAME> listening on HOST:PORT" in LOG (the child's
# stdout) and prints PORT; if the child dies first, prints its logs and fails.
wait_listening() {
  local name=$1 log=$2 pid=$3 line
  for _ in $(seq 1 600); do
    line=$(grep -m1 "$name listening on" "$log" 2>/dev/null || true)
    if [[ -n $line ]]; then
      echo "${line##*:}"
      return 0
    fi
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "demo: $name exited during start-up:" >&2
      cat "$log" "$log.err" >&2 || true
      return 1
    fi
    sleep 0.1
  done
  echo "demo: $name did not start within 60 s" >&2
  return 1
}

# Starts three engine-sims and a gateway (default strategy $1) on free loopback ports;
# sets GATEWAY_URL.
start_cluster() {
  local strategy=$1 i port endpoints=""
  for i in 1 2 3; do
    # A log left by the previous run would be read before the new process truncates it.
    rm -f "$TMP/engine$i.log" "$TMP/engine$i.log.err"
    "$BIN" engine-sim --profile "$PROFILE" --time-scale "$K" --port 0 \
      --engine-label "replica$i" >"$TMP/engine$i.log" 2>"$TMP/engine$i.log.err" &
    PIDS+=($!)
    port=$(wait_listening engine-sim "$TMP/engine$i.log" "$!")
    endpoints+="      - http://127.0.0.1:$port"$'\n'
  done
  # scrape_interval_s is in model seconds: 1/K model seconds (50 ms at K = 20, the Gateway API
  # Inference Extension's default metrics refresh) keeps the router's view fresh.
  cat >"$TMP/gateway.yaml" <<EOF
listen: {address: 127.0.0.1, port: 0}
strategy: $strategy
scrape_interval_s: $(awk -v k="$K" 'BEGIN { printf "%.4f", 1.0 / k }')
time_scale: $K
request_timeout_s: 600
pools:
  - name: demo
    model: google/gemma-3-27b-it
    endpoints:
$endpoints
EOF
  rm -f "$TMP/gateway.log" "$TMP/gateway.log.err"
  "$BIN" gateway --config "$TMP/gateway.yaml" >"$TMP/gateway.log" 2>"$TMP/gateway.log.err" &
  PIDS+=($!)
  port=$(wait_listening gateway "$TMP/gateway.log" "$!")
  GATEWAY_URL="http://127.0.0.1:$port"
}

# run_case LABEL STRATEGY BENCH-ARGS...: one benchmark run on a fresh cluster.
run_case() {
  local label=$1 strategy=$2
  shift 2
  local t0=$SECONDS
  start_cluster "$strategy"
  echo "== $label / $strategy (time scale $K)"
  "$BIN" bench --target "$GATEWAY_URL" --strategy "$strategy" --time-scale "$K" \
    --label "$label" --summary "$OUT/summary.json" --out "$OUT/requests" "$@"
  stop_all
  echo "   ($((SECONDS - t0)) s wall)"
}

mkdir -p "$OUT"
rm -f "$OUT/summary.json"
rm -rf "$OUT/requests"
demo_t0=$SECONDS

for strategy in $STRATEGIES; do
  run_case mooncake-trace "$strategy" --workload trace --trace "$TRACE" \
    --offset "$TRACE_OFFSET" --trace-sample "$TRACE_SAMPLE" --limit "$TRACE_LIMIT" \
    --speed "$TRACE_SPEED" \
    --max-output-tokens "$TRACE_MAX_OUT"
done
for strategy in $STRATEGIES; do
  run_case shared-prefix "$strategy" --workload shared-prefix --sessions "$SP_SESSIONS" \
    --rate "$SP_RATE" --seed 1
done

echo
echo "Kinference demo: 3 x engine-sim $PROFILE, time scale $K, all times model seconds"
"$BIN" bench table --summary "$OUT/summary.json"
# Report with plots (TTFT CDF per strategy, requests in flight per endpoint over time) beside
# it; matplotlib comes from a venv cached outside the clone (scripts/plot-env.sh).
if PY=$(bash scripts/plot-env.sh); then
  "$PY" scripts/plot_bench.py "$OUT"
else
  echo "demo: no plotting venv (scripts/plot-env.sh failed); report without plots" >&2
  python3 scripts/plot_bench.py "$OUT"
fi
echo "(summary: $OUT/summary.json; report: $OUT/REPORT.md; per-request records: $OUT/requests/; $((SECONDS - demo_t0)) s wall)"
