#!/usr/bin/env bash
# `make bench-gateway`: what each front adds in front of one engine, side by side.
#
# One engine-sim at a very high time scale (so the engine's own time is a few tens of
# microseconds) serves behind every front:
#   direct         the engine-sim itself
#   kinference     `kinference gateway`, one pool with the one endpoint
#   nginx          Debian's nginx, one worker, keep-alive upstream, buffering off (SSE)
#   sglang-router  sglang-router (PyPI, Rust), --policy cache_aware
#   vllm-router    vllm-router (PyPI, Rust), --policy cache_aware
# The same load tool (`kinference bench http`: closed loop on keep-alive connections) drives
# every front. Rounds are interleaved (every front once per round, in a rotating order) so
# that a machine busy with something else skews all fronts alike; each number reported is
# the median over rounds. Per front and round:
#   low load (1 connection): whole non-streamed response (p50, p99) and first byte of a
#     streamed one (p50, p99), in microseconds; "added" = front minus direct;
#   saturation (BENCH_GW_CONNECTIONS, default "32 64"): requests/s, and the front's CPU
#     time per request (utime + stime of its process tree over the phase);
#   resident memory (VmRSS after the round, VmHWM peak).
# Results: results/gateway/runs.jsonl (one line per phase) and results/gateway/REPORT.md.
# Knobs (environment): BUILD, BENCH_GW_ROUNDS (3), BENCH_GW_REQUESTS (low-load requests per
# phase, 400), BENCH_GW_SAT_REQUESTS (4000), BENCH_GW_FRONTS, BENCH_GW_TIME_SCALE (2000),
# BENCH_GW_PIN (1: fronts on CPU 1, engine and load tool on CPU 0, when there are >= 2 CPUs).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
BIN=${KINFERENCE_BIN:-$BUILD/kinference}
ROUNDS=${BENCH_GW_ROUNDS:-3}
LOW_REQUESTS=${BENCH_GW_REQUESTS:-400}
SAT_REQUESTS=${BENCH_GW_SAT_REQUESTS:-4000}
CONNECTIONS=${BENCH_GW_CONNECTIONS:-"32 64"}
FRONTS=${BENCH_GW_FRONTS:-"direct kinference nginx sglang-router vllm-router"}
K=${BENCH_GW_TIME_SCALE:-2000}
PIN=${BENCH_GW_PIN:-1}
OUT=${BENCH_GW_OUT:-results/gateway}

[[ -x $BIN ]] || { echo "bench-gateway: $BIN not found; run 'make build' first" >&2; exit 1; }
eval "$(bash scripts/peers-env.sh)"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-bench-gw.XXXXXX")
PIDS=()
# shellcheck source=scripts/lib/fronts.sh
source scripts/lib/fronts.sh
trap 'stop_pids; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

FRONT_CPU=() LOAD_CPU=()
if [[ $PIN == 1 && $(nproc) -ge 2 ]]; then
  FRONT_CPU=(taskset -c 1)
  LOAD_CPU=(taskset -c 0)
fi

# A process and its descendants.
tree() {
  local k
  echo "$1"
  for k in $(pgrep -P "$1" 2>/dev/null || true); do tree "$k"; done
}
# CPU ticks (utime + stime) of a process tree.
cpu_ticks() {
  local p total=0
  for p in $(tree "$1"); do
    [[ -r /proc/$p/stat ]] || continue
    total=$((total + $(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
  done
  echo "$total"
}
rss_kib() { # PID FIELD (VmRSS | VmHWM), summed over the process tree
  local p total=0
  for p in $(tree "$1"); do
    total=$((total + $(awk -v f="$2:" '$1 == f { print $2 }' "/proc/$p/status" 2>/dev/null || echo 0)))
  done
  echo "$total"
}

declare -A PID URL
start_engines 1 "$K"
for f in $FRONTS; do
  if [[ $f == direct ]]; then
    URL[$f]=${ENGINE_URLS[0]} PID[$f]=${ENGINE_PIDS[0]}
  else
    # Kinference runs as deployed (real time, a scrape a second): only the engine is fast.
    start_front "$f" predicted-ttft 1 1
    URL[$f]=$FRONT_URL PID[$f]=$FRONT_PID
  fi
done

body() { # STREAM
  printf '{"model":"%s","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":8,"stream":%s}' \
    "$MODEL" "$1"
}
body false >"$TMP/body.json"
body true >"$TMP/body_stream.json"

mkdir -p "$OUT"
: >"$OUT/runs.jsonl"
load() { # FRONT ROUND PHASE ARGS...: one load run, appended to runs.jsonl
  local f=$1 r=$2 phase=$3 t0 t1 json
  shift 3
  t0=$(cpu_ticks "${PID[$f]}")
  json=$("${LOAD_CPU[@]}" "$BIN" bench http --target "${URL[$f]}" "$@" 2>"$TMP/load.err") || {
    echo "bench-gateway: $f $phase failed: $(cat "$TMP/load.err")" >&2
    return 0
  }
  t1=$(cpu_ticks "${PID[$f]}")
  python3 - "$f" "$r" "$phase" "$((t1 - t0))" "$(getconf CLK_TCK)" "$json" "$(rss_kib "${PID[$f]}" VmRSS)" \
    "$(rss_kib "${PID[$f]}" VmHWM)" >>"$OUT/runs.jsonl" <<'EOF'
import json, sys
front, rnd, phase, ticks, hz, run, rss, hwm = sys.argv[1:]
d = json.loads(run)
d.update(front=front, round=int(rnd), phase=phase, cpu_s=int(ticks) / int(hz),
         rss_kib=int(rss), hwm_kib=int(hwm))
print(json.dumps(d))
EOF
}

fronts=($FRONTS)
echo "bench-gateway: fronts ${fronts[*]}; engine-sim at time scale $K; $ROUNDS rounds"
for ((r = 1; r <= ROUNDS; r++)); do
  n=${#fronts[@]}
  for ((i = 0; i < n; i++)); do
    f=${fronts[$(((i + r - 1) % n))]}
    echo "  round $r: $f"
    load "$f" "$r" low "--body-file" "$TMP/body.json" --connections 1 --requests "$LOW_REQUESTS" --warmup 50
    load "$f" "$r" low-stream --body-file "$TMP/body_stream.json" --connections 1 \
      --requests "$LOW_REQUESTS" --warmup 50
    for c in $CONNECTIONS; do
      load "$f" "$r" "sat-$c" --body-file "$TMP/body.json" --connections "$c" \
        --requests "$SAT_REQUESTS" --warmup "$c"
    done
  done
done

python3 scripts/bench_gateway_report.py "$OUT/runs.jsonl" "$K" >"$OUT/REPORT.md"
cat "$OUT/REPORT.md"
