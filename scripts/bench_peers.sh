#!/usr/bin/env bash
# `make bench-peers`: Kinference against the routers people would otherwise deploy, on the
# demo's workloads. Every run gets three fresh engine-sims (cold caches, profile
# l40s-27b-fp8, K times faster than real time) and one front:
#   kinference/random, kinference/predicted-ttft   `kinference gateway`
#   sglang-router                                  sglang-router, --policy cache_aware
#   vllm-router                                    vllm-router, --policy cache_aware
#   nginx                                          round robin, keep-alive, no buffering
# and `kinference bench` replays the same workload through it:
#   mooncake-trace   a slice of the Mooncake conversation trace (as make demo)
#   shared-prefix    24 prefixes of 16,000 tokens, Poisson arrivals (as make demo)
# Reported per front (results/peers/summary.json, `kinference bench table`): TTFT p50/p90/
# p99, ITL and e2e, the cached-token ratio the engines reported in usage; and the split of
# requests over the three replicas (from each engine's vllm:request_success_total), in
# results/peers/REPORT.md, with plots beside it (TTFT CDF per front, replica split).
# Note on vllm-router: its cache_aware policy keys chat requests by
# session_params.session_id (not message text); the bench sends none, as a client of the
# OpenAI API would not, so it balances without prefix knowledge.
# Knobs (environment): BUILD, BENCH_PEERS_TIME_SCALE (20), BENCH_PEERS_FRONTS,
# BENCH_PEERS_WORKLOADS ("mooncake-trace shared-prefix"), and demo.sh's DEMO_* sizes.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
BIN=${KINFERENCE_BIN:-$BUILD/kinference}
K=${BENCH_PEERS_TIME_SCALE:-20}
FRONTS=${BENCH_PEERS_FRONTS:-"kinference/random kinference/predicted-ttft sglang-router vllm-router nginx"}
WORKLOADS=${BENCH_PEERS_WORKLOADS:-"mooncake-trace shared-prefix"}
TRACE=${DEMO_TRACE:-data/traces/mooncake_conversation_trace.jsonl}
TRACE_SAMPLE=${DEMO_TRACE_SAMPLE:-16}
TRACE_LIMIT=${DEMO_TRACE_LIMIT:-200}
TRACE_SPEED=${DEMO_TRACE_SPEED:-1.5}
TRACE_MAX_OUT=${DEMO_TRACE_MAX_OUT:-256}
SP_SESSIONS=${DEMO_SP_SESSIONS:-150}
SP_RATE=${DEMO_SP_RATE:-0.2}
OUT=${BENCH_PEERS_OUT:-results/peers}

[[ -x $BIN ]] || { echo "bench-peers: $BIN not found; run 'make build' first" >&2; exit 1; }
eval "$(bash scripts/peers-env.sh)"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-bench-peers.XXXXXX")
PIDS=()
FRONT_CPU=() LOAD_CPU=()
# shellcheck source=scripts/lib/fronts.sh
source scripts/lib/fronts.sh
trap 'stop_pids; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# Requests each engine finished (vllm:request_success_total summed over finish reasons).
engine_requests() {
  curl -fsS "$1/metrics" | awk '/^vllm:request_success_total/ { n += $NF } END { printf "%d", n }'
}

mkdir -p "$OUT"
rm -f "$OUT/summary.json" "$OUT/split.jsonl"
t_all=$SECONDS
for w in $WORKLOADS; do
  case $w in
  mooncake-trace)
    args=(--workload trace --trace "$TRACE" --trace-sample "$TRACE_SAMPLE" --limit "$TRACE_LIMIT"
      --speed "$TRACE_SPEED" --max-output-tokens "$TRACE_MAX_OUT")
    ;;
  shared-prefix) args=(--workload shared-prefix --sessions "$SP_SESSIONS" --rate "$SP_RATE" --seed 1) ;;
  *)
    echo "bench-peers: unknown workload $w" >&2
    exit 2
    ;;
  esac
  for front in $FRONTS; do
    t0=$SECONDS
    start_engines 3 "$K"
    name=${front%%/*}
    strategy=${front#*/}
    [[ $strategy == "$front" ]] && strategy=""
    # Kinference scrapes every 1/K model seconds, as make demo does.
    start_front "$name" "$strategy" "$K" "$(awk -v k="$K" 'BEGIN { printf "%.4f", 1.0 / k }')"
    echo "== $w / $front (time scale $K)"
    # The strategy column names the front (Kinference's rows: its strategy). The peers
    # ignore the x-kinference-strategy header that carries it.
    "$BIN" bench --target "$FRONT_URL" --model "$MODEL" --time-scale "$K" --label "$w" \
      --strategy "${strategy:-$front}" --summary "$OUT/summary.json" --out "$OUT/requests" "${args[@]}" |
      tail -n +3 || echo "bench-peers: $w / $front failed" >&2
    split=()
    for u in "${ENGINE_URLS[@]}"; do split+=("$(engine_requests "$u")"); done
    printf '{"workload":"%s","front":"%s","requests_per_replica":[%s]}\n' "$w" "$front" \
      "$(IFS=,; echo "${split[*]}")" >>"$OUT/split.jsonl"
    stop_pids
    echo "   replicas served ${split[*]} ($((SECONDS - t0)) s wall)"
  done
done

{
  echo "# bench-peers: Kinference and the routers people deploy instead"
  echo
  echo "Three engine-sims (l40s-27b-fp8) at time scale $K, fresh for every run; model seconds."
  echo "Command: \`make bench-peers\` (scripts/bench_peers.sh); $((SECONDS - t_all)) s wall."
  echo "Rows \`random\` and \`predicted-ttft\` are Kinference with that strategy; the others name the front."
  echo
  echo '```'
  "$BIN" bench table --summary "$OUT/summary.json"
  echo '```'
  echo
  echo "Requests served per replica:"
  echo
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    n = d["requests_per_replica"]
    total = sum(n) or 1
    print("- %s / %s: %s (largest share %.0f%%)" % (d["workload"], d["front"], n, 100 * max(n) / total))
' "$OUT/split.jsonl"
} >"$OUT/REPORT.md"
# Plots beside the report (TTFT CDF per front, requests per replica per front), with
# matplotlib from the cached venv (scripts/plot-env.sh); their section is appended.
if PY=$(bash scripts/plot-env.sh); then
  "$PY" scripts/plot_bench.py "$OUT" --report PLOTS.md >&2
  { echo; sed -n '/^## Plots/,$p' "$OUT/PLOTS.md"; } >>"$OUT/REPORT.md"
else
  echo "bench-peers: no plotting venv (scripts/plot-env.sh failed); report without plots" >&2
fi
cat "$OUT/REPORT.md"
