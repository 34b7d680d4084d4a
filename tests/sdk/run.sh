#!/usr/bin/env bash
# SDK conformance: drives `kinference gateway` (in front of two engine-sims) with the
# official `openai` and `anthropic` Python SDKs and pytest.
#
# Usage: tests/sdk/run.sh [KINFERENCE_BIN]   (else $KINFERENCE_BIN, else build/kinference)
# The venv lives next to the binary (<build>/sdk-venv; override with $SDK_VENV) and is
# created once from tests/sdk/requirements.txt (pip, from PyPI), then reused until the
# requirements change. Exits 0 with a SKIPPED line only when python3 or its venv module
# is missing (scripts/install-deps.sh installs python3-venv, so CI always runs it).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${1:-${KINFERENCE_BIN:-$ROOT/build/kinference}}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
[[ -x "$BIN" ]] || { echo "run.sh: kinference binary not found: $BIN" >&2; exit 2; }
VENV="${SDK_VENV:-$(dirname "$BIN")/sdk-venv}"
MODEL="sdk-model"
TIME_SCALE=20

if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  echo "SKIPPED SDK conformance tests: python3 with the venv module is not installed" \
       "(apt-get install python3-venv)"
  exit 0
fi

# The venv, rebuilt when requirements.txt changes.
STAMP="$VENV/.requirements"
if ! cmp -s "$HERE/requirements.txt" "$STAMP" 2>/dev/null; then
  echo "== creating $VENV (pip install -r tests/sdk/requirements.txt)"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
  cp "$HERE/requirements.txt" "$STAMP"
fi

# Logs of the servers, kept for a failed run (<build>/sdk-logs).
WORK="$(dirname "$BIN")/sdk-logs"
rm -rf "$WORK" && mkdir -p "$WORK"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

# launch NAME ARGS...: runs `kinference ARGS` in the background, logging to $WORK/NAME.log.
launch() {
  local name="$1"; shift
  "$BIN" "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=("$!")
}
# port_of NAME PID: waits for NAME's "listening on host:port" line and prints the port.
port_of() {
  local name="$1" pid="$2" line
  for _ in $(seq 1 300); do
    line="$(grep -m1 'listening on' "$WORK/$name.log" || true)"
    if [[ -n "$line" ]]; then
      echo "${line##*:}" | tr -dc '0-9'
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "run.sh: $name did not start:" >&2
  cat "$WORK/$name.log" >&2
  return 1
}

launch sim1 engine-sim --port 0 --time-scale "$TIME_SCALE" --served-model-name "$MODEL"
launch sim2 engine-sim --port 0 --time-scale "$TIME_SCALE" --served-model-name "$MODEL"
# An Anthropic provider: engine-sim's /v1/messages, x-api-key required.
ANTHROPIC_MODEL="sdk-claude"
ANTHROPIC_KEY="sk-sdk-anthropic"
launch sim3 engine-sim --port 0 --time-scale "$TIME_SCALE" --served-model-name claude-sim \
  --require-api-key "$ANTHROPIC_KEY"
SIM1=$(port_of sim1 "${PIDS[0]}")
SIM2=$(port_of sim2 "${PIDS[1]}")
SIM3=$(port_of sim3 "${PIDS[2]}")
cat >"$WORK/gateway.yaml" <<YAML
listen: {address: 127.0.0.1, port: 0}
time_scale: $TIME_SCALE
scrape_interval_s: 2.0
pools:
  - name: sim
    model: $MODEL
    endpoints: ["http://127.0.0.1:$SIM1", "http://127.0.0.1:$SIM2"]
providers:
  - name: claude
    api: anthropic
    model: claude-sim
    serves_model: $ANTHROPIC_MODEL
    base_url: http://127.0.0.1:$SIM3
    api_key_env: KINFERENCE_SDK_ANTHROPIC_KEY
YAML
export KINFERENCE_SDK_ANTHROPIC_KEY="$ANTHROPIC_KEY"
launch gateway gateway --config "$WORK/gateway.yaml"
unset KINFERENCE_SDK_ANTHROPIC_KEY
GW=$(port_of gateway "${PIDS[3]}")

export KINFERENCE_GATEWAY_URL="http://127.0.0.1:$GW"
export KINFERENCE_MODEL="$MODEL"
export KINFERENCE_ANTHROPIC_MODEL="$ANTHROPIC_MODEL"
export KINFERENCE_ANTHROPIC_SIM_URL="http://127.0.0.1:$SIM3"
export KINFERENCE_ANTHROPIC_SIM_KEY="$ANTHROPIC_KEY"
echo "== SDK conformance against $KINFERENCE_GATEWAY_URL (server logs: $WORK)"
cd "$HERE"
# pytest's own summary line is the last line of output.
"$VENV/bin/python" -m pytest -p no:cacheprovider -q -rfE "$HERE"
