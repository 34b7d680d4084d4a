# Sourced by scripts/bench_gateway.sh and scripts/bench_peers.sh: starting the fronts that
# Kinference is compared with, on free loopback ports, and stopping them by process id.
# The caller sets BIN (kinference binary), TMP (a private folder), and keeps PIDS (an array
# of every process started) for its EXIT trap; FRONT_CPU may hold a `taskset -c N` prefix.
# The peers come from scripts/peers-env.sh (NGINX, SGLANG_ROUTER, VLLM_ROUTER).
# Each start_* function sets FRONT_URL and FRONT_PID.

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_listening NAME LOG PID: waits for "<NAME> listening on HOST:PORT" in LOG and prints
# PORT; if the process dies first, prints its logs and fails.
wait_listening() {
  local line i
  for ((i = 0; i < 600; i++)); do
    line=$(grep -m1 "$1 listening on" "$2" 2>/dev/null || true)
    if [[ -n $line ]]; then
      echo "${line##*:}"
      return 0
    fi
    if ! kill -0 "$3" 2>/dev/null; then
      echo "$1 exited during start-up:" >&2
      cat "$2" "$2.err" >&2 2>/dev/null || true
      return 1
    fi
    sleep 0.1
  done
  echo "$1 did not start within 60 s" >&2
  return 1
}

# start_engines N K [ARGS...]: N engine-sims at time scale K; sets ENGINE_URLS (array),
# ENGINE_PIDS (array) and MODEL (what they serve).
start_engines() {
  local n=$1 k=$2 i port
  shift 2
  ENGINE_URLS=() ENGINE_PIDS=()
  for ((i = 1; i <= n; i++)); do
    # A log left by an earlier run would be read before the new process truncates it.
    rm -f "$TMP/engine$i.log" "$TMP/engine$i.log.err"
    "${LOAD_CPU[@]}" "$BIN" engine-sim --time-scale "$k" --port 0 --engine-label "replica$i" "$@" \
      >"$TMP/engine$i.log" 2>"$TMP/engine$i.log.err" &
    PIDS+=($!)
    ENGINE_PIDS+=($!)
    port=$(wait_listening engine-sim "$TMP/engine$i.log" $!)
    ENGINE_URLS+=("http://127.0.0.1:$port")
  done
  MODEL=$(curl -fsS "${ENGINE_URLS[0]}/v1/models" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
}

# start_kinference STRATEGY K [SCRAPE_INTERVAL_S]: a gateway with one pool of ENGINE_URLS.
start_kinference() {
  local port eps
  eps=$(printf '%s, ' "${ENGINE_URLS[@]}")
  cat >"$TMP/gateway.yaml" <<EOF
listen: {address: 127.0.0.1, port: 0}
strategy: $1
time_scale: $2
scrape_interval_s: ${3:-1}
request_timeout_s: 600
pools:
  - name: bench
    model: $MODEL
    endpoints: [${eps%, }]
EOF
  rm -f "$TMP/gateway.log" "$TMP/gateway.log.err"
  "${FRONT_CPU[@]}" "$BIN" gateway --config "$TMP/gateway.yaml" >"$TMP/gateway.log" 2>"$TMP/gateway.log.err" &
  PIDS+=($!)
  FRONT_PID=$!
  port=$(wait_listening gateway "$TMP/gateway.log" "$FRONT_PID")
  FRONT_URL=http://127.0.0.1:$port
}

# start_nginx: one worker, round robin over ENGINE_URLS with keep-alive upstream
# connections, buffering off both ways (SSE passes through as it is written).
start_nginx() {
  local port dir=$TMP/nginx servers="" u i
  port=$(free_port)
  mkdir -p "$dir"
  for u in "${ENGINE_URLS[@]}"; do servers+="server ${u#http://}; "; done
  cat >"$dir/nginx.conf" <<EOF
worker_processes 1;
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  client_max_body_size 64m;
  proxy_read_timeout 3600s;
  upstream engines { $servers keepalive 64; }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://engines;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_request_buffering off;
    }
  }
}
EOF
  "${FRONT_CPU[@]}" "$NGINX" -c "$dir/nginx.conf" -g 'daemon off;' 2>"$dir/stderr" &
  PIDS+=($!)
  FRONT_PID=$!
  FRONT_URL=http://127.0.0.1:$port
  for ((i = 0; i < 100; i++)); do
    curl -fsS -o /dev/null "$FRONT_URL/v1/models" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nginx did not start:" >&2
  cat "$dir/stderr" "$dir/error.log" >&2 2>/dev/null || true
  return 1
}

# start_rust_router sglang-router|vllm-router: --policy cache_aware (their default and
# documented prefix-cache policy) over ENGINE_URLS; waits until /workers lists every engine.
start_rust_router() {
  local port cmd level=warn i u ok
  port=$(free_port)
  if [[ $1 == sglang-router ]]; then cmd=$SGLANG_ROUTER; else cmd=$VLLM_ROUTER level=warning; fi
  # shellcheck disable=SC2086
  "${FRONT_CPU[@]}" $cmd --host 127.0.0.1 --port "$port" --worker-urls "${ENGINE_URLS[@]}" \
    --policy cache_aware --prometheus-host 127.0.0.1 --prometheus-port "$(free_port)" \
    --log-level $level >"$TMP/$1.log" 2>&1 &
  PIDS+=($!)
  FRONT_PID=$!
  FRONT_URL=http://127.0.0.1:$port
  for ((i = 0; i < 600; i++)); do
    ok=1
    local workers
    workers=$(curl -fsS "$FRONT_URL/workers" 2>/dev/null || true)
    for u in "${ENGINE_URLS[@]}"; do
      [[ $workers == *"${u#http://}"* ]] || ok=0
    done
    [[ $ok == 1 ]] && return 0
    if ! kill -0 "$FRONT_PID" 2>/dev/null; then
      echo "$1 exited during start-up:" >&2
      cat "$TMP/$1.log" >&2
      return 1
    fi
    sleep 0.2
  done
  echo "$1 did not list its workers within 120 s" >&2
  return 1
}

# start_front NAME [STRATEGY K SCRAPE]: kinference | nginx | sglang-router | vllm-router.
start_front() {
  case $1 in
  kinference) start_kinference "$2" "$3" "${4:-1}" ;;
  nginx) start_nginx ;;
  sglang-router | vllm-router) start_rust_router "$1" ;;
  *)
    echo "unknown front $1" >&2
    return 2
    ;;
  esac
}

# stop_pids: stops (TERM, then waits) every process in PIDS.
stop_pids() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
