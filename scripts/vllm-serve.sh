#!/usr/bin/env bash
# Starts and stops real vLLM (CPU build, tiny local model) instances on loopback.
#
# Usage:
#   scripts/vllm-serve.sh start DIR N [EXTRA_VLLM_ARGS...]
#       Installs/reuses the environment (scripts/vllm-env.sh), starts N instances, waits
#       until every one answers GET /health, and writes DIR/env (sourceable shell):
#         VLLM_N, VLLM_MODEL (served model name), VLLM_MODEL_DIR, VLLM_PYTHON,
#         VLLM_URLS, VLLM_PIDS, VLLM_KV_ENDPOINTS, VLLM_KV_REPLAY_ENDPOINTS (space separated,
#         instance order), VLLM_KV_TOPIC, and per instance i: VLLM_URL_i, VLLM_PID_i,
#         VLLM_KV_ENDPOINT_i, VLLM_KV_REPLAY_ENDPOINT_i, VLLM_LOG_i.
#       Fails (and stops what it started) if an instance exits or is not healthy in time.
#   scripts/vllm-serve.sh stop DIR
#       SIGTERM to every instance's process group, SIGKILL after a grace period, then removes
#       the temp files vLLM leaves (vllm_dist_*, in the instance's own TMPDIR).
#
# Each instance: its own core (VLLM_CPU_OMP_THREADS_BIND = i mod nproc), 1 GiB of KV cache
# (VLLM_CPU_KVCACHE_SPACE=1; without it vLLM wants 92% of RAM), --enforce-eager (start-up
# ~50 s instead of ~110 s on 2 cores, same speed), prefix caching, prompt-token details
# (usage.prompt_tokens_details.cached_tokens), KV events (ZeroMQ PUB + replay ROUTER, topic
# "kv"). vLLM 0.32 binds its PUB socket only for a wildcard endpoint (tcp://*:P; a concrete
# address makes it connect instead), so the PUB listens on all interfaces; the replay socket
# and the HTTP server listen on 127.0.0.1. Consumers connect to tcp://127.0.0.1:P.
# Each instance runs in its own session (setsid), so its process group id is its pid and
# stop/kill reaches vLLM's engine-core child too.
# Knobs (environment): VLLM_SERVED_MODEL_NAME (default tiny-qwen2), VLLM_KV_SPACE_GIB (1),
# VLLM_START_TIMEOUT_S (600), VLLM_STOP_GRACE_S (20).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODEL_NAME=${VLLM_SERVED_MODEL_NAME:-tiny-qwen2}
KV_SPACE=${VLLM_KV_SPACE_GIB:-1}
START_TIMEOUT=${VLLM_START_TIMEOUT_S:-600}
STOP_GRACE=${VLLM_STOP_GRACE_S:-20}

log() { echo "vllm-serve: $*" >&2; }
usage() {
  echo "usage: $0 start DIR N [EXTRA_VLLM_ARGS...] | stop DIR" >&2
  exit 2
}

# free_ports K: prints K distinct free TCP ports (bound together on all interfaces, then
# released, so none is in use on 0.0.0.0 or 127.0.0.1 when printed).
free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# stop_pids GRACE PID...: SIGTERM to each process group, SIGKILL to those left after GRACE s.
stop_pids() {
  local grace=$1 pid left i
  shift
  for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; done
  for ((i = 0; i < grace * 10; i++)); do
    left=0
    for pid in "$@"; do
      if kill -0 -- "-$pid" 2>/dev/null; then left=1; fi
    done
    [[ $left -eq 0 ]] && return 0
    sleep 0.1
  done
  for pid in "$@"; do
    if kill -0 -- "-$pid" 2>/dev/null; then
      log "process group $pid still running after ${grace} s; SIGKILL"
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
  done
}

cmd_stop() {
  local dir=$1 pids=()
  [[ -d $dir ]] || return 0
  if [[ -f $dir/pids ]]; then read -r -a pids <"$dir/pids" || true; fi
  if [[ ${#pids[@]} -gt 0 ]]; then stop_pids "$STOP_GRACE" "${pids[@]}"; fi
  rm -rf "$dir"/tmp-* "$dir/pids" "$dir/env"
}

cmd_start() {
  local dir=$1 n=$2
  shift 2
  [[ $n =~ ^[1-9][0-9]*$ ]] || usage
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  if [[ -f $dir/pids ]]; then
    log "$dir already has running instances (pids file); stop them first"
    exit 1
  fi
  local vllm_python="" vllm_model_dir=""
  eval "$("$HERE/vllm-env.sh" | sed -n 's/^VLLM_PYTHON=/vllm_python=/p; s/^VLLM_MODEL_DIR=/vllm_model_dir=/p')"
  [[ -x $vllm_python && -d $vllm_model_dir ]] || { log "vllm-env.sh failed"; exit 1; }

  local cores i ports port kv replay pids=() urls=() kvs=() replays=() env_lines=()
  cores=$(nproc)
  # Stop what was started if anything below fails.
  trap 'if [[ ${#pids[@]} -gt 0 ]]; then stop_pids 5 "${pids[@]}"; fi; rm -rf "$dir"/tmp-* "$dir/pids"' ERR
  for ((i = 0; i < n; i++)); do
    read -r port kv replay < <(free_ports 3)
    mkdir -p "$dir/tmp-$i"
    local cfg
    cfg=$(printf '{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://*:%s", "replay_endpoint": "tcp://127.0.0.1:%s", "topic": "kv"}' "$kv" "$replay")
    TMPDIR="$dir/tmp-$i" VLLM_CPU_KVCACHE_SPACE="$KV_SPACE" \
      VLLM_CPU_OMP_THREADS_BIND=$((i % cores)) VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 \
      VLLM_CACHE_ROOT="$dir/tmp-$i/vllm-cache" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
      TOKENIZERS_PARALLELISM=false \
      setsid "$vllm_python" -m vllm.entrypoints.openai.api_server \
      --model "$vllm_model_dir" --served-model-name "$MODEL_NAME" \
      --host 127.0.0.1 --port "$port" --seed 0 \
      --enforce-eager --enable-prefix-caching --enable-prompt-tokens-details \
      --kv-events-config "$cfg" "$@" </dev/null >"$dir/vllm-$i.log" 2>&1 &
    pids+=("$!")
    echo "${pids[*]}" >"$dir/pids"
    urls+=("http://127.0.0.1:$port")
    kvs+=("tcp://127.0.0.1:$kv")
    replays+=("tcp://127.0.0.1:$replay")
    env_lines+=("VLLM_URL_$i=http://127.0.0.1:$port" "VLLM_PID_$i=${pids[i]}"
      "VLLM_KV_ENDPOINT_$i=tcp://127.0.0.1:$kv" "VLLM_KV_REPLAY_ENDPOINT_$i=tcp://127.0.0.1:$replay"
      "VLLM_LOG_$i=$dir/vllm-$i.log")
    log "instance $i: pid ${pids[i]}, http://127.0.0.1:$port, core $((i % cores)), log $dir/vllm-$i.log"
  done

  local t0=$SECONDS ready
  for ((;;)); do
    ready=0
    for ((i = 0; i < n; i++)); do
      if ! kill -0 "${pids[i]}" 2>/dev/null; then
        log "instance $i exited during start-up; last lines of its log:"
        tail -n 30 "$dir/vllm-$i.log" >&2 || true
        false
      fi
      if curl -fsS -o /dev/null --max-time 2 "${urls[i]}/health" 2>/dev/null; then ready=$((ready + 1)); fi
    done
    [[ $ready -eq $n ]] && break
    if ((SECONDS - t0 > START_TIMEOUT)); then
      log "instances not healthy after ${START_TIMEOUT} s"
      false
    fi
    sleep 1
  done
  trap - ERR
  {
    echo "VLLM_N=$n"
    echo "VLLM_MODEL=$MODEL_NAME"
    echo "VLLM_MODEL_DIR=$vllm_model_dir"
    echo "VLLM_PYTHON=$vllm_python"
    echo "VLLM_URLS=\"${urls[*]}\""
    echo "VLLM_PIDS=\"${pids[*]}\""
    echo "VLLM_KV_ENDPOINTS=\"${kvs[*]}\""
    echo "VLLM_KV_REPLAY_ENDPOINTS=\"${replays[*]}\""
    echo "VLLM_KV_TOPIC=kv"
    printf '%s\n' "${env_lines[@]}"
  } >"$dir/env.tmp"
  mv "$dir/env.tmp" "$dir/env"
  log "$n instance(s) healthy after $((SECONDS - t0)) s; $dir/env"
}

[[ $# -ge 2 ]] || usage
case $1 in
  start) [[ $# -ge 3 ]] || usage; cmd_start "${@:2}" ;;
  stop) cmd_stop "$2" ;;
  *) usage ;;
esac
