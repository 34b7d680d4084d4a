#!/usr/bin/env bash
# CPU time the gateway spends per request, streamed and not: the robust column of
# `make bench-gateway` on its own, for before/after comparisons of the request path.
#
# One engine-sim at time scale 2000 behind `kinference gateway` (bench-gateway's config:
# predicted-ttft, real time, a scrape a second); `kinference bench http` (closed loop on
# keep-alive connections) sends bench-gateway's request (2 messages, max_tokens 8) at
# GW_CPU_CONNECTIONS (32). The gateway's utime + stime (/proc/PID/stat) is read before and
# after GW_CPU_REQUESTS (8000) measured requests per phase; CPU per request is the
# difference over the requests. Phases: non-streamed, streamed (GW_CPU_PHASES). Rounds
# (GW_CPU_ROUNDS, 3) alternate the phases; the median is printed, then every round.
# CPU time counts the gateway's own work only, so it holds better than throughput or
# latency on a busy machine; it still moves with contention (cache, context switches),
# so compare binaries side by side: GW_CPU_BINS="OLD NEW" runs one gateway per binary
# behind the same engine and interleaves them within every round.
# GW_CPU_PERF=FILE records a profile of the (first) gateway over the measured phases
# (perf record --call-graph dwarf); GW_CPU_SYSCALLS=FILE counts its system calls.
# Usage: scripts/gateway_cpu.sh [BUILD]   (BUILD defaults to build)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-${BUILD:-build}}
BIN=${KINFERENCE_BIN:-$BUILD/kinference}
BINS=(${GW_CPU_BINS:-$BIN})
REQUESTS=${GW_CPU_REQUESTS:-8000}
CONNECTIONS=${GW_CPU_CONNECTIONS:-32}
ROUNDS=${GW_CPU_ROUNDS:-3}
PHASES=${GW_CPU_PHASES:-"whole stream"}
MAX_TOKENS=${GW_CPU_MAX_TOKENS:-8}
for b in "${BINS[@]}"; do [[ -x $b ]] || { echo "gateway_cpu: $b not found" >&2; exit 1; }; done
BIN=${BINS[0]}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-gw-cpu.XXXXXX")
PIDS=()
FRONT_CPU=() LOAD_CPU=()
# shellcheck source=scripts/lib/fronts.sh
source scripts/lib/fronts.sh
trap 'stop_pids; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }

start_engines 1 2000
GW_URL=() GW_PID=()
for b in "${BINS[@]}"; do
  BIN=$b start_kinference predicted-ttft 1 1
  GW_URL+=("$FRONT_URL") GW_PID+=("$FRONT_PID")
  cp "$TMP/gateway.log" "$TMP/gateway-${#GW_PID[@]}.log"
done
BIN=${BINS[0]}
body() {
  printf '{"model":"%s","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":%s,"stream":%s}' \
    "$MODEL" "$MAX_TOKENS" "$1"
}
body false >"$TMP/whole.json"
body true >"$TMP/stream.json"

HZ=$(getconf CLK_TCK)
if [[ -n ${GW_CPU_PERF:-} ]]; then
  perf record -q -F 1999 --call-graph dwarf,16384 -p "${GW_PID[0]}" -o "$GW_CPU_PERF" 2>/dev/null &
  PERF_PID=$!
  sleep 1
elif [[ -n ${GW_CPU_SYSCALLS:-} ]]; then
  perf stat -e 'syscalls:sys_enter_*' -p "${GW_PID[0]}" -o "$GW_CPU_SYSCALLS" 2>/dev/null &
  PERF_PID=$!
  sleep 1
fi
declare -A RESULTS
for ((r = 1; r <= ROUNDS; r++)); do
  for phase in $PHASES; do
    for ((g = 0; g < ${#BINS[@]}; g++)); do
      "$BIN" bench http --target "${GW_URL[$g]}" --body-file "$TMP/$phase.json" \
        --connections "$CONNECTIONS" --requests 200 --warmup 0 >/dev/null 2>&1
      t0=$(ticks "${GW_PID[$g]}")
      json=$("$BIN" bench http --target "${GW_URL[$g]}" --body-file "$TMP/$phase.json" \
        --connections "$CONNECTIONS" --requests "$REQUESTS" --warmup 0 2>/dev/null)
      t1=$(ticks "${GW_PID[$g]}")
      us=$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); n=d['requests']+d['errors']; \
print(f'{($t1-$t0)/$HZ/n*1e6:.1f} {d[\"errors\"]} {d[\"requests_per_s\"]:.0f}')" "$json")
      RESULTS[$g.$phase]+="$us;"
      echo "round $r ${BINS[$g]} $phase: cpu_us_per_request errors req_per_s = $us" >&2
    done
  done
done
if [[ -n ${PERF_PID:-} ]]; then
  kill -INT "$PERF_PID"
  wait "$PERF_PID" || true
fi
echo "gateway CPU per request ($REQUESTS requests x $ROUNDS rounds, $CONNECTIONS connections, max_tokens $MAX_TOKENS; load $(cut -d' ' -f1-3 /proc/loadavg)):"
for ((g = 0; g < ${#BINS[@]}; g++)); do
  for phase in $PHASES; do
    python3 -c "import statistics,sys; v=[float(x.split()[0]) for x in sys.argv[3].split(';') if x]; \
print(f'  {sys.argv[1]} {sys.argv[2]}: median {statistics.median(v):.1f} us (rounds: {\", \".join(f\"{x:.1f}\" for x in v)})')" \
      "${BINS[$g]}" "$phase" "${RESULTS[$g.$phase]}"
  done
done
