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
#
# DEMO_BACKEND=vllm (`make demo-vllm`): the same job against real vLLM replicas (CPU build,
# tiny local model; scripts/vllm-serve.sh), in real time, results in results/demo-vllm/.
# Only the shared-prefix workload, sized for the tiny model (see the DEMO_VLLM_* knobs
# below). The replicas start once (start-up is ~1 min each); before every run their
# prefix caches are emptied (POST /reset_prefix_cache, served with VLLM_SERVER_DEV_MODE=1)
# and the gateway restarts, so every strategy starts cold, as with engine-sim.
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
BACKEND=${DEMO_BACKEND:-engine-sim}
OUT=results/demo
MODEL=google/gemma-3-27b-it
if [[ $BACKEND == vllm ]]; then
  # Real vLLM, tiny model, real time. Sizes: 12 prefixes of 1,000 workload tokens (~3,600
  # tokens of the tiny model's tokenizer, 28 blocks of 128), 50-token unique suffixes, 32
  # output tokens. Each replica's KV cache is cut to 224 blocks (--num-gpu-blocks-override):
  # all 12 prefixes (336 blocks) do not fit in one replica, half of them do, so routing
  # decides the hit rate, as the 16,000-token prefixes do on engine-sim's L40S profile.
  OUT=results/demo-vllm
  K=1
  VLLM_REPLICAS=${DEMO_VLLM_REPLICAS:-2}
  VLLM_BLOCKS=${DEMO_VLLM_BLOCKS:-224}
  SP_SESSIONS=${DEMO_SP_SESSIONS:-300}
  SP_RATE=${DEMO_SP_RATE:-1.5}
  SP_SHAPE=(--prefixes "${DEMO_VLLM_PREFIXES:-12}" --prefix-tokens "${DEMO_VLLM_PREFIX_TOKENS:-1000}"
    --suffix-tokens "${DEMO_VLLM_SUFFIX_TOKENS:-50}" --output-tokens "${DEMO_VLLM_OUTPUT_TOKENS:-32}")
elif [[ $BACKEND != engine-sim ]]; then
  echo "demo: DEMO_BACKEND must be engine-sim or vllm" >&2
  exit 2
else
  SP_SHAPE=()
fi

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

# wait_listening and stop_pids (stops every process in PIDS) are shared with the bench scripts.
# shellcheck source=scripts/lib/fronts.sh
source scripts/lib/fronts.sh
cleanup() {
  stop_pids
  if [[ $BACKEND == vllm ]]; then bash scripts/vllm-serve.sh stop "$TMP/vllm" || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# vLLM replicas for DEMO_BACKEND=vllm: started once; sets VLLM_ENDPOINTS (YAML list items).
VLLM_ENDPOINTS=""
start_vllm() {
  local url
  VLLM_SERVER_DEV_MODE=1 bash scripts/vllm-serve.sh start "$TMP/vllm" "$VLLM_REPLICAS" \
    --num-gpu-blocks-override "$VLLM_BLOCKS" --max-model-len 8192
  # shellcheck disable=SC1091
  source "$TMP/vllm/env"
  MODEL=$VLLM_MODEL
  for url in $VLLM_URLS; do VLLM_ENDPOINTS+="      - $url"$'\n'; done
}
# Empties every replica's prefix cache, so the next run starts cold.
reset_vllm_caches() {
  local url
  for url in $VLLM_URLS; do
    curl -fsS -X POST "$url/reset_prefix_cache" >/dev/null || {
      echo "demo: POST $url/reset_prefix_cache failed" >&2
      return 1
    }
  done
}

# Starts three engine-sims (DEMO_BACKEND=vllm: resets the vLLM replicas' caches instead)
# and a gateway (default strategy $1) on free loopback ports; sets GATEWAY_URL.
start_cluster() {
  local strategy=$1 i port endpoints=""
  if [[ $BACKEND == vllm ]]; then
    reset_vllm_caches
    endpoints=$VLLM_ENDPOINTS
  fi
  for i in $([[ $BACKEND == vllm ]] || echo 1 2 3); do
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
  # Real vLLM: every 0.25 s (its requests last tens of milliseconds).
  local scrape
  scrape=$(awk -v k="$K" 'BEGIN { printf "%.4f", 1.0 / k }')
  [[ $BACKEND == vllm ]] && scrape=0.25
  cat >"$TMP/gateway.yaml" <<EOF
listen: {address: 127.0.0.1, port: 0}
strategy: $strategy
scrape_interval_s: $scrape
time_scale: $K
request_timeout_s: 600
pools:
  - name: demo
    model: $MODEL
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
  stop_pids
  echo "   ($((SECONDS - t0)) s wall)"
}

mkdir -p "$OUT"
rm -f "$OUT/summary.json"
rm -rf "$OUT/requests"
demo_t0=$SECONDS
if [[ $BACKEND == vllm ]]; then start_vllm; fi

for strategy in $STRATEGIES; do
  [[ $BACKEND == vllm ]] && break  # the trace's 12k-token prompts exceed the tiny model
  run_case mooncake-trace "$strategy" --workload trace --trace "$TRACE" \
    --offset "$TRACE_OFFSET" --trace-sample "$TRACE_SAMPLE" --limit "$TRACE_LIMIT" \
    --speed "$TRACE_SPEED" \
    --max-output-tokens "$TRACE_MAX_OUT"
done
for strategy in $STRATEGIES; do
  run_case shared-prefix "$strategy" --workload shared-prefix --sessions "$SP_SESSIONS" \
    --rate "$SP_RATE" --seed 1 "${SP_SHAPE[@]}"
done

echo
if [[ $BACKEND == vllm ]]; then
  echo "Kinference demo: $VLLM_REPLICAS x real vLLM $(grep -m1 -o 'version [0-9.]*' "$TMP/vllm/vllm-0.log" || true) (CPU, tiny model $MODEL), real seconds"
else
  echo "Kinference demo: 3 x engine-sim $PROFILE, time scale $K, all times model seconds"
fi
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
