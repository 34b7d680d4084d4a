#!/usr/bin/env bash
# The real-vLLM suite: two real vLLM instances (CPU build, tiny local model;
# scripts/vllm-serve.sh) behind `kinference gateway`, driven by pytest
# (tests/realvllm/test_*.py) over plain HTTP.
#
# Usage: tests/realvllm/run.sh [KINFERENCE_BIN [PYTEST_ARGS...]]
#   KINFERENCE_BIN: else $KINFERENCE_BIN, else build/kinference; PYTEST_ARGS select tests,
#   e.g. `run.sh build/kinference -k precise` (CTest runs them all).
# The vLLM environment is installed on first use (scripts/vllm-env.sh, cached under
# ~/.cache/kinference); a machine that has it pays only the instances' start-up.
# Logs (gateway, vLLM) stay in <build>/realvllm-logs for a failed run.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${1:-${KINFERENCE_BIN:-$ROOT/build/kinference}}"
shift || true
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
[[ -x "$BIN" ]] || { echo "run.sh: kinference binary not found: $BIN" >&2; exit 2; }
WORK="$(dirname "$BIN")/realvllm-logs"
t0=$SECONDS

GW_PID=""
SIM_PID=""
cleanup() {
  local pid
  for pid in $GW_PID $SIM_PID; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  bash "$ROOT/scripts/vllm-serve.sh" stop "$WORK/vllm" || true
}
trap cleanup EXIT
bash "$ROOT/scripts/vllm-serve.sh" stop "$WORK/vllm" 2>/dev/null || true
rm -rf "$WORK" && mkdir -p "$WORK"

# Start-up of two instances took 465-631 s on a loaded 2-core machine and once passed
# vllm-serve.sh's default 600 s limit; CTest gives the whole suite 1800 s.
export VLLM_START_TIMEOUT_S=${VLLM_START_TIMEOUT_S:-1200}
# --enable-log-requests: the engine log names each aborted request ("Aborted request(s) ...").
bash "$ROOT/scripts/vllm-serve.sh" start "$WORK/vllm" 2 --enable-log-requests --max-log-len 32
# shellcheck disable=SC1091
source "$WORK/vllm/env"
echo "== 2 vLLM instances up after $((SECONDS - t0)) s"

endpoints=""
for url in $VLLM_URLS; do endpoints+="\"$url\", "; done
cat >"$WORK/gateway.yaml" <<YAML
listen: {address: 127.0.0.1, port: 0}
strategy: predicted-ttft
scrape_interval_s: 0.25
time_scale: 1
request_timeout_s: 300
pools:
  - name: real
    model: $VLLM_MODEL
    endpoints: [${endpoints%, }]
YAML
# port_of NAME PID: waits for NAME's "listening on host:port" line and prints the port.
port_of() {
  local name=$1 pid=$2 line
  for _ in $(seq 1 300); do
    line="$(grep -m1 'listening on' "$WORK/$name.log" || true)"
    if [[ -n $line ]]; then echo "${line##*:}" | tr -dc '0-9'; return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "run.sh: $name did not start:" >&2
  cat "$WORK/$name.log" >&2
  return 1
}
"$BIN" gateway --config "$WORK/gateway.yaml" >"$WORK/gateway.log" 2>&1 &
GW_PID=$!
port=$(port_of gateway "$GW_PID")
# engine-sim serving the same model name, for the conformance test (test_50_conformance.py).
"$BIN" engine-sim --port 0 --time-scale 20 --served-model-name "$VLLM_MODEL" \
  >"$WORK/engine-sim.log" 2>&1 &
SIM_PID=$!
sim_port=$(port_of engine-sim "$SIM_PID")
export REALVLLM_ENGINE_SIM_URL="http://127.0.0.1:$sim_port"

export REALVLLM_GATEWAY_URL="http://127.0.0.1:$port"
export REALVLLM_GATEWAY_LOG="$WORK/gateway.log"
export REALVLLM_ENV="$WORK/vllm/env"
export REALVLLM_POOL="real"
export REALVLLM_KINFERENCE_BIN="$BIN"  # tests that start a gateway of their own
echo "== real-vLLM suite against $REALVLLM_GATEWAY_URL (logs: $WORK)"
rc=0
"$VLLM_PYTHON" -m pytest -p no:cacheprovider -q -rfE -c "$HERE/pytest.ini" "$HERE" "$@" || rc=$?
echo "== real-vLLM suite: $((SECONDS - t0)) s wall (start-up included)"
exit $rc
