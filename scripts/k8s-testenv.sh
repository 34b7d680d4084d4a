#!/usr/bin/env bash
# A real Kubernetes API server on loopback, for tests and demos: etcd + kube-apiserver (built by
# scripts/k8s-tools.sh), RBAC on, an admin bearer token, service-account tokens signed with a
# key made here. No scheduler, kubelet or controller-manager: Pods stay Pending until a test
# patches their status (docs/kubernetes.md, "Test environment").
#
# Usage:
#   scripts/k8s-testenv.sh start DIR            start both; DIR is created (must be empty or absent)
#   scripts/k8s-testenv.sh stop DIR             stop both (by PID; safe to repeat, or after a failed start)
#   scripts/k8s-testenv.sh stop-apiserver DIR   stop kube-apiserver only (etcd keeps the state)
#   scripts/k8s-testenv.sh start-apiserver DIR  start it again on the same port, wait until ready
#
# `start` prints DIR/env's path; DIR/env is KEY=VALUE lines (shell-sourceable, no quoting):
#   KUBECONFIG, K8S_SERVER (https://127.0.0.1:PORT), K8S_API_PORT, K8S_CA_FILE (apiserver.crt,
#   the self-signed serving certificate: the CA clients verify against), K8S_TOKEN and
#   K8S_TOKEN_FILE (the admin's: user "admin", group system:masters), K8S_BIN (kubectl, helm),
#   ETCD_PORT, ETCD_PEER_PORT, ETCD_PID, APISERVER_PID, K8S_TESTENV_DIR.
# DIR/kubeconfig: context "kinference-test" (admin), namespace "default".
# Logs: DIR/etcd.log, DIR/kube-apiserver.log.
#
# Environment:
#   K8S_TESTENV_WATCH_PID  stop everything once this process is gone (a test runner's PID), so
#                          a killed test never leaves servers behind.
#   K8S_TESTENV_NO_BUILD=1 fail at once when the tools are not built, instead of building them
#                          (15-30 min cold); tests set it, `make test` builds the tools first.
#   K8S_TESTENV_TIMEOUT_S  seconds to wait for readiness (default 90; measured 2.3-3.2 s idle).
# Ports: free loopback ports probed at start (a start that loses a port race is retried).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TIMEOUT_S=${K8S_TESTENV_TIMEOUT_S:-90}

log() { echo "k8s-testenv: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}
usage() { die "usage: $0 start|stop|stop-apiserver|start-apiserver DIR"; }

[[ $# -eq 2 ]] || usage
CMD=$1
DIR=$2

# The value of KEY in DIR/env.
env_get() { sed -n "s/^$1=//p" "$DIR/env" | tail -1; }

# True if PID is alive and was started with DIR on its command line (a recycled PID is not ours).
is_ours() {
  local pid=$1
  [[ -n $pid && -r /proc/$pid/cmdline ]] &&
    tr '\0' '\n' <"/proc/$pid/cmdline" | D="$DIR" awk 'index($0, ENVIRON["D"]) == 1 &&
      (length($0) == length(ENVIRON["D"]) || substr($0, length(ENVIRON["D"]) + 1, 1) == "/") {
      found = 1 } END { exit !found }'
}

# True while PID runs: it exists and is not a zombie. Unlike is_ours this stays true while an
# exiting process tears down its threads: the kernel empties /proc/PID/cmdline when the
# main thread releases its memory, before the process is gone and its ports are closed.
running() {
  local pid=$1 stat
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat:0:1} != Z ]]
}

# SIGTERM, up to 15 s, then SIGKILL; returns once the process is gone. After is_ours has
# named the PID ours, `running` follows it (a PID is not reused within these seconds).
stop_pid() { # name pidfile
  local pid i
  pid=$(cat "$DIR/$2" 2>/dev/null || true)
  if is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do
      running "$pid" || break
      sleep 0.1
    done
    if running "$pid"; then
      log "$1 (pid $pid) did not stop on SIGTERM; SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      # SIGKILL is asynchronous: wait until the process is gone so a caller can reuse its port.
      for ((i = 0; i < 100; i++)); do
        running "$pid" || break
        sleep 0.1
      done
    fi
  fi
  rm -f "$DIR/$2"
}

stop_all() {
  local wd
  wd=$(cat "$DIR/watchdog.pid" 2>/dev/null || true)
  # The watchdog runs this script with DIR as an argument, so is_ours recognises it.
  if [[ -n $wd && $wd != "${K8S_TESTENV_SELF_WATCHDOG:-}" ]] && is_ours "$wd"; then
    kill -TERM "$wd" 2>/dev/null || true
  fi
  rm -f "$DIR/watchdog.pid"
  stop_pid kube-apiserver apiserver.pid
  stop_pid etcd etcd.pid
}

# Prints N distinct free loopback TCP ports (held open together while probing).
free_ports() {
  python3 - "$1" <<'EOF'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

# wait_until DESCRIPTION PIDFILE LOG COMMAND...: polls COMMAND every 0.2 s until it succeeds,
# failing early (with the log's tail) when the process exits.
wait_until() {
  local what=$1 pidfile=$2 logfile=$3 deadline
  shift 3
  deadline=$((SECONDS + TIMEOUT_S))
  until "$@" >/dev/null 2>&1; do
    if ! is_ours "$(cat "$DIR/$pidfile" 2>/dev/null)"; then
      log "$what exited; last lines of $logfile:"
      tail -20 "$logfile" >&2 || true
      return 1
    fi
    if ((SECONDS >= deadline)); then
      log "$what not ready within $TIMEOUT_S s; last lines of $logfile:"
      tail -20 "$logfile" >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

start_etcd() {
  local port=$1 peer=$2
  setsid "$K8S_BIN/etcd" --name kinference-test --data-dir "$DIR/etcd" \
    --listen-client-urls "http://127.0.0.1:$port" --advertise-client-urls "http://127.0.0.1:$port" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "kinference-test=http://127.0.0.1:$peer" --unsafe-no-fsync \
    --log-level warn </dev/null >>"$DIR/etcd.log" 2>&1 &
  echo $! >"$DIR/etcd.pid"
  wait_until etcd etcd.pid "$DIR/etcd.log" etcd_ready "$port"
}

etcd_ready() { curl -fsS "http://127.0.0.1:$1/health" | grep -q '"health":"true"'; }

# readyz covers etcd, the RBAC bootstrap roles and the post-start hooks; the default namespace
# is created just after, and tests create objects in it.
apiserver_ready() {
  local auth=(--cacert "$DIR/certs/apiserver.crt" -H "Authorization: Bearer $(env_get K8S_TOKEN)")
  local url="https://127.0.0.1:$(env_get K8S_API_PORT)"
  [[ -s $DIR/certs/apiserver.crt ]] && [[ $(curl -fsS "${auth[@]}" "$url/readyz") == ok ]] &&
    curl -fsS "${auth[@]}" "$url/api/v1/namespaces/default" >/dev/null
}

start_apiserver() {
  local port etcd_port
  port=$(env_get K8S_API_PORT)
  etcd_port=$(env_get ETCD_PORT)
  # Flags as controller-runtime's envtest starts it; ServiceAccount admission is off because
  # no controller creates default ServiceAccounts or token Secrets here.
  setsid "$K8S_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_port" \
    --cert-dir "$DIR/certs" --secure-port "$port" --bind-address 127.0.0.1 \
    --advertise-address 127.0.0.1 --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode RBAC --token-auth-file "$DIR/tokens.csv" \
    --service-account-issuer "https://127.0.0.1:$port" \
    --service-account-key-file "$DIR/sa.pub" --service-account-signing-key-file "$DIR/sa.key" \
    --disable-admission-plugins ServiceAccount --allow-privileged=true \
    --endpoint-reconciler-type none </dev/null >>"$DIR/kube-apiserver.log" 2>&1 &
  echo $! >"$DIR/apiserver.pid"
  sed -i "s/^APISERVER_PID=.*/APISERVER_PID=$!/" "$DIR/env"
  wait_until kube-apiserver apiserver.pid "$DIR/kube-apiserver.log" apiserver_ready
}

tools_bin() {
  if [[ -n ${K8S_BIN:-} ]]; then
    echo "$K8S_BIN"
  elif [[ ${K8S_TESTENV_NO_BUILD:-0} == 1 ]]; then
    local bin t
    bin=$(bash "$ROOT/scripts/k8s-tools.sh" --print-dir)
    for t in etcd kube-apiserver kubectl helm; do
      [[ -x $bin/$t ]] || die "$bin/$t is missing: run scripts/k8s-tools.sh first (make test does)"
    done
    echo "$bin"
  else
    bash "$ROOT/scripts/k8s-tools.sh" | tail -1
  fi
}

do_start() {
  [[ ! -e $DIR || -z $(ls -A "$DIR" 2>/dev/null) ]] || die "$DIR exists and is not empty"
  mkdir -p "$DIR"
  DIR=$(cd "$DIR" && pwd)
  K8S_BIN=$(tools_bin)
  # Any failure from here on stops what was started.
  trap 'rc=$?; if [[ $rc -ne 0 ]]; then stop_all; log "start failed (logs in $DIR)"; fi' EXIT

  mkdir -p "$DIR/certs"
  chmod 700 "$DIR"
  openssl genrsa -out "$DIR/sa.key" 2048 2>/dev/null
  openssl rsa -in "$DIR/sa.key" -pubout -out "$DIR/sa.pub" 2>/dev/null
  local token attempt ports etcd_port peer_port api_port
  token=$(openssl rand -hex 32)
  echo "$token" >"$DIR/token"
  echo "$token,admin,admin-uid,\"system:masters\"" >"$DIR/tokens.csv"

  for attempt in 1 2 3; do
    read -r etcd_port peer_port api_port <<<"$(free_ports 3)"
    cat >"$DIR/env" <<EOF
K8S_TESTENV_DIR=$DIR
KUBECONFIG=$DIR/kubeconfig
K8S_SERVER=https://127.0.0.1:$api_port
K8S_API_PORT=$api_port
K8S_CA_FILE=$DIR/certs/apiserver.crt
K8S_TOKEN=$token
K8S_TOKEN_FILE=$DIR/token
K8S_BIN=$K8S_BIN
ETCD_PORT=$etcd_port
ETCD_PEER_PORT=$peer_port
ETCD_PID=
APISERVER_PID=
EOF
    rm -rf "$DIR/etcd" "$DIR/certs"/*
    if start_etcd "$etcd_port" "$peer_port"; then
      sed -i "s/^ETCD_PID=.*/ETCD_PID=$(cat "$DIR/etcd.pid")/" "$DIR/env"
      if start_apiserver; then break; fi
    fi
    stop_all
    if ((attempt == 3)); then die "could not start the API server (logs in $DIR)"; fi
    log "start attempt $attempt failed; retrying on other ports"
  done

  cat >"$DIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kinference-test
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $DIR/certs/apiserver.crt
users:
- name: admin
  user:
    token: $token
contexts:
- name: kinference-test
  context:
    cluster: kinference-test
    user: admin
    namespace: default
current-context: kinference-test
EOF
  chmod 600 "$DIR/kubeconfig"

  if [[ -n ${K8S_TESTENV_WATCH_PID:-} ]]; then
    # Detached from our stdout/stderr so that a caller reading them sees EOF when we exit.
    setsid bash "$0" __watchdog "$DIR" </dev/null >>"$DIR/watchdog.log" 2>&1 &
    echo $! >"$DIR/watchdog.pid"
  fi
  trap - EXIT
  log "API server ready at https://127.0.0.1:$api_port (etcd pid $(env_get ETCD_PID), kube-apiserver pid $(env_get APISERVER_PID))"
  echo "$DIR/env"
}

case $CMD in
  start) do_start ;;
  stop)
    [[ -d $DIR ]] || exit 0
    DIR=$(cd "$DIR" && pwd)
    stop_all
    ;;
  stop-apiserver)
    DIR=$(cd "$DIR" && pwd)
    stop_pid kube-apiserver apiserver.pid
    ;;
  start-apiserver)
    DIR=$(cd "$DIR" && pwd)
    K8S_BIN=$(env_get K8S_BIN)
    is_ours "$(cat "$DIR/apiserver.pid" 2>/dev/null)" && die "kube-apiserver is running"
    start_apiserver || die "kube-apiserver did not become ready"
    ;;
  __watchdog)
    # Internal: stops the environment once K8S_TESTENV_WATCH_PID is gone.
    DIR=$(cd "$DIR" && pwd)
    while kill -0 "$K8S_TESTENV_WATCH_PID" 2>/dev/null && [[ -f $DIR/etcd.pid ]]; do sleep 1; done
    K8S_TESTENV_SELF_WATCHDOG=$$ stop_all
    ;;
  *) usage ;;
esac
