#!/usr/bin/env bash
# Kinference on Kubernetes, on one machine (`make demo-k8s`): a real API server
# (scripts/k8s-testenv.sh), the chart's CRDs and the Inference Extension's InferencePool CRD,
# three engine-sim "pods" in two InferencePools (chat-a: pods chat-a-0 and chat-a-1, chat-b:
# pod chat-b-0, all serving one model), `kinference controller` and
# `kinference gateway --kubernetes`. Then it
#   1. applies the example policies with kubectl and shows their status (Accepted, revision);
#   2. sends load with `kinference bench` and shows, from the gateway's /metrics, how many
#      requests each pod got;
#   3. marks pod chat-a-1 not Ready (as a kubelet would, through the status subresource),
#      sends the same load again and shows that pod getting none of it;
#   4. applies a policy that keeps the model on pool chat-a, edits it with kubectl to chat-b,
#      and rolls it back with `kinference policy rollback`, with load after each step: the
#      traffic follows each revision, and `kinference policy history` lists them.
# There is no kubelet: the pods' processes are engine-sims on 127.0.0.2-4 started here, and
# the script writes each pod's status (Running, podIP, Ready) itself.
#
# Run from the repository root after `make build` (make demo-k8s does both). Knobs
# (environment): BUILD, DEMO_K8S_REQUESTS (requests per load phase, default 40),
# DEMO_K8S_RATE (requests per model second, default 0.5; 2,000-token prompts, so one pod keeps
# its queue under the example policy's maxQueueDepth 8), DEMO_TIME_SCALE (engine-sim speed-up, default 20),
# DEMO_K8S_KEEP=1 (keep the logs). Everything started here is stopped on exit. Exits non-zero
# if a step does not show what it should.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
BIN=${KINFERENCE_BIN:-$BUILD/kinference}
REQUESTS=${DEMO_K8S_REQUESTS:-40}
RATE=${DEMO_K8S_RATE:-0.5}
K=${DEMO_TIME_SCALE:-20}
NS=demo
MODEL=demo-model
PODS=(chat-a-0 chat-a-1 chat-b-0)
POOLS=(chat-a chat-a chat-b)
IPS=(127.0.0.2 127.0.0.3 127.0.0.4)
[[ -x $BIN ]] || {
  echo "demo-k8s: $BIN not found; run 'make build' first" >&2
  exit 1
}

K8S_BIN=$(bash scripts/k8s-tools.sh | tail -1)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-demo-k8s.XXXXXX")
PIDS=()
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  bash scripts/k8s-testenv.sh stop "$TMP/k8s" >/dev/null 2>&1 || true
  [[ -n ${DEMO_K8S_KEEP:-} ]] && echo "demo-k8s: logs kept in $TMP" || rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
kubectl() { "$K8S_BIN/kubectl" --kubeconfig "$TMP/k8s/kubeconfig" -n "$NS" "$@"; }
kinference_k8s() { "$BIN" "$@" --kubeconfig "$TMP/k8s/kubeconfig" --namespace "$NS"; }
say() { printf '\n== %s\n' "$*"; }
die() {
  echo "demo-k8s: $*" >&2
  for f in "$TMP"/gateway.log.err "$TMP"/controller.log.err; do
    [[ -s $f ]] && { echo "--- tail of $(basename "$f")" >&2; tail -20 "$f" >&2; }
  done
  exit 1
}

# wait_listening NAME LOG PID: "<NAME> listening on HOST:PORT" in LOG -> PORT.
wait_listening() {
  local name=$1 log=$2 pid=$3 line
  for _ in $(seq 1 600); do
    line=$(grep -m1 "$name listening on" "$log" 2>/dev/null || true)
    if [[ -n $line ]]; then
      echo "${line##*:}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || die "$name exited during start-up: $(cat "$log" "$log.err" 2>/dev/null)"
    sleep 0.1
  done
  die "$name did not start within 60 s"
}
# until_true SECONDS COMMAND...: retries COMMAND every 0.2 s.
until_true() {
  local n=$(($1 * 5))
  shift
  for _ in $(seq 1 "$n"); do
    "$@" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  return 1
}

# A port free on all three pod IPs (a pool has one target port for all its pods).
PORT=$(python3 - "${IPS[@]}" <<'EOF'
import socket, sys
for _ in range(100):
    s = socket.socket(); s.bind((sys.argv[1], 0)); port = s.getsockname()[1]
    try:
        others = []
        for ip in sys.argv[2:]:
            o = socket.socket(); o.bind((ip, port)); others.append(o)
        print(port); break
    except OSError:
        continue
EOF
)

say "Kubernetes API server (etcd + kube-apiserver on loopback)"
bash scripts/k8s-testenv.sh start "$TMP/k8s" >/dev/null
sed -n 's/^K8S_SERVER=/  /p' "$TMP/k8s/env"
kubectl apply -f deploy/helm/kinference/crds/ \
  -f tests/testing/k8s/inferencepools.inference.networking.k8s.io.yaml >/dev/null
kubectl wait --for condition=Established --timeout=60s crd --all >/dev/null
"$K8S_BIN/kubectl" --kubeconfig "$TMP/k8s/kubeconfig" create namespace "$NS" >/dev/null
kubectl get crd -o custom-columns=CRD:.metadata.name,GROUP:.spec.group

say "InferencePools chat-a and chat-b; their pods are engine-sims on ${IPS[*]}, port $PORT"
for pool in chat-a chat-b; do
  kubectl apply -f - >/dev/null <<EOF
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata: {name: $pool}
spec:
  selector: {matchLabels: {pool: $pool}}
  targetPorts: [{number: $PORT}]
EOF
done
for i in 0 1 2; do
  "$BIN" engine-sim --host "${IPS[$i]}" --port "$PORT" --time-scale "$K" \
    --served-model-name "$MODEL" --engine-label "${PODS[$i]}" \
    >"$TMP/engine$i.log" 2>"$TMP/engine$i.log.err" &
  PIDS+=($!)
  wait_listening engine-sim "$TMP/engine$i.log" "$!" >/dev/null
  kubectl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: ${PODS[$i]}, labels: {pool: ${POOLS[$i]}}}
spec:
  containers: [{name: vllm, image: vllm/vllm-openai:v0.32.0, ports: [{containerPort: $PORT}]}]
EOF
done
# set_ready INDEX True|False: what the kubelet would write.
set_ready() {
  local i=$1 now
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  kubectl patch pod "${PODS[$i]}" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"Running\",
    \"podIP\":\"${IPS[$i]}\",\"podIPs\":[{\"ip\":\"${IPS[$i]}\"}],\"conditions\":[
    {\"type\":\"Ready\",\"status\":\"$2\",\"lastTransitionTime\":\"$now\"},
    {\"type\":\"ContainersReady\",\"status\":\"$2\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
}
for i in 0 1 2; do set_ready "$i" True; done
kubectl get inferencepools
kubectl get pods -L pool -o custom-columns='POD:.metadata.name,POOL:.metadata.labels.pool,IP:.status.podIP,READY:.status.conditions[?(@.type=="Ready")].status'

say "kinference controller and kinference gateway --kubernetes"
"$BIN" controller --kubeconfig "$TMP/k8s/kubeconfig" --namespace "$NS" --listen 127.0.0.1:0 \
  >"$TMP/controller.log" 2>"$TMP/controller.log.err" &
PIDS+=($!)
CONTROLLER_PORT=$(wait_listening controller "$TMP/controller.log" "$!")
cat >"$TMP/gateway.yaml" <<EOF
listen: {address: 127.0.0.1, port: 0}
strategy: predicted-ttft
scrape_interval_s: $(awk -v k="$K" 'BEGIN { printf "%.4f", 1.0 / k }')
time_scale: $K
EOF
"$BIN" gateway --kubernetes --kubeconfig "$TMP/k8s/kubeconfig" --namespace "$NS" \
  --config "$TMP/gateway.yaml" >"$TMP/gateway.log" 2>"$TMP/gateway.log.err" &
PIDS+=($!)
GATEWAY="http://127.0.0.1:$(wait_listening gateway "$TMP/gateway.log" "$!")"
echo "  controller on 127.0.0.1:$CONTROLLER_PORT, gateway on $GATEWAY"
# The gateway learns the pods from the pools and their models from each pod's /v1/models.
until_true 30 bash -c "curl -fsS '$GATEWAY/v1/models' | grep -q '\"$MODEL\"'" ||
  die "the gateway does not serve $MODEL after 30 s"
curl -fsS "$GATEWAY/v1/models" |
  python3 -c 'import json,sys; print("  models:", [m["id"] for m in json.load(sys.stdin)["data"]])'

say "Example policies applied with kubectl (examples/policies/)"
kubectl apply -f examples/policies/
n=$(ls examples/policies/*.yaml | wc -l)
until_true 30 bash -c "[[ \$('$K8S_BIN/kubectl' --kubeconfig '$TMP/k8s/kubeconfig' -n $NS get inferencepolicies \
  -o jsonpath='{.items[*].status.currentRevision}' | wc -w) == $n ]]" ||
  die "the controller did not accept the $n example policies within 30 s"
kubectl get inferencepolicies

# requests_by_pod: kinference_requests_total summed per endpoint (the gateway names a pod's
# endpoint "<pool>/<pod>"), from the gateway's /metrics, as "ENDPOINT=N ...".
requests_by_pod() {
  curl -fsS "$GATEWAY/metrics" | python3 -c '
import re, sys, collections
c = collections.Counter()
for line in sys.stdin:
    m = re.match(r"kinference_requests_total\{(.*)\} (\S+)", line)
    if m:
        ep = re.search(r"endpoint=\"([^\"]*)\"", m.group(1))
        if ep:
            c[ep.group(1)] += float(m.group(2))
print(" ".join(f"{k}={int(v)}" for k, v in sorted(c.items())))'
}
LAST=$(requests_by_pod)
# load SEED LABEL: one load phase; prints the requests each pod got in it and leaves
# "POD=N ..." for this phase in $PHASE.
load() {
  "$BIN" bench --target "$GATEWAY" --model "$MODEL" --workload shared-prefix \
    --prefix-tokens 2000 --output-tokens 64 --sessions "$REQUESTS" --rate "$RATE" \
    --time-scale "$K" --seed "$1" --label "$2" --summary "$TMP/summary.json" >"$TMP/bench-$2.log" 2>&1 || die "bench $2 failed: $(tail -5 "$TMP/bench-$2.log")"
  local now
  now=$(requests_by_pod)
  PHASE=$(python3 - "$LAST" "$now" "${IPS[*]}" "${PODS[*]}" <<'EOF'
import sys
def parse(s):
    return {k: int(v) for k, v in (kv.rsplit("=", 1) for kv in s.split())}
before, after = parse(sys.argv[1]), parse(sys.argv[2])
pods = dict(zip(sys.argv[3].split(), sys.argv[4].split()))
def is_pod(ep, ip, pod):  # "<pool>/<pod>", or an address
    return ep == pod or ep.endswith("/" + pod) or ep.split(":")[0] == ip
out = []
for ip, pod in pods.items():
    n = sum(v - before.get(ep, 0) for ep, v in after.items() if is_pod(ep, ip, pod))
    out.append(f"{pod}={n}")
print(" ".join(out))
EOF
)
  LAST=$now
  awk -v l="$2" '$1 == l { printf "  bench: %s requests, %s failed or refused, TTFT p50 %s (model time)\n", $3, $4, $5 }' \
    "$TMP/bench-$2.log"
  echo "  requests per pod: $PHASE"
  local failed
  failed=$(awk -v l="$2" '$1 == l { print $4 }' "$TMP/bench-$2.log")
  [[ $failed == 0 ]] || die "$failed of $REQUESTS requests failed: $(grep -m1 'first:' "$TMP/bench-$2.log")"
}
# got POD: that pod's requests in the last phase.
got() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$PHASE"; }
# expect_only POD...: in the last phase, these pods got requests and the others none.
expect_only() {
  local p want
  for p in "${PODS[@]}"; do
    want=0
    [[ " $* " == *" $p "* ]] && want=1
    if ((want)); then
      (($(got "$p") > 0)) || die "$p got no requests in this phase; expected some"
    else
      (($(got "$p") == 0)) || die "$p got $(got "$p") requests in this phase; expected none"
    fi
  done
}

say "Load: $REQUESTS requests (kinference bench, shared-prefix), all three pods Ready"
load 1 three-ready
expect_only "${PODS[@]}"

say "Pod chat-a-1 becomes not Ready; the same load again"
set_ready 1 False
kubectl get pods -o custom-columns='POD:.metadata.name,IP:.status.podIP,READY:.status.conditions[?(@.type=="Ready")].status'
sleep 1
load 2 one-not-ready
expect_only chat-a-0 chat-b-0
echo "  chat-a-1 got none: the gateway dropped it when its Ready condition went False"

POLICY=demo-model-pool
say "InferencePolicy $POLICY: $MODEL only on pool chat-a (revision 1)"
kubectl apply -f - <<EOF
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: $POLICY}
spec:
  priority: 200
  match: {models: [$MODEL]}
  constraints:
    include: {pools: [chat-a]}
EOF
revision_is() {
  [[ $(kubectl get inferencepolicy "$POLICY" -o jsonpath='{.status.currentRevision}') == "$1" ]]
}
until_true 30 revision_is 1 || die "$POLICY not at revision 1 after 30 s"
kubectl get inferencepolicy "$POLICY"
sleep 1
load 3 policy-rev1
expect_only chat-a-0
echo "  only chat-a-0 (chat-a-1 is still not Ready)"

say "Policy edited with kubectl: pool chat-b instead (revision 2)"
kubectl patch inferencepolicy "$POLICY" --type=merge -p '{"spec":{"constraints":{"include":{"pools":["chat-b"]}}}}'
until_true 30 revision_is 2 || die "$POLICY not at revision 2 after 30 s"
sleep 1
load 4 policy-rev2
expect_only chat-b-0
echo "  only chat-b-0"

say "kinference policy history / rollback --to-revision 1"
kinference_k8s policy history "$POLICY"
kinference_k8s policy rollback "$POLICY" --to-revision 1
until_true 30 bash -c "[[ \$('$K8S_BIN/kubectl' --kubeconfig '$TMP/k8s/kubeconfig' -n $NS get inferencepolicy $POLICY \
  -o jsonpath='{.spec.constraints.include.pools[0]}') == chat-a ]]" || die "rollback did not restore chat-a"
until_true 30 bash -c "[[ \$('$K8S_BIN/kubectl' --kubeconfig '$TMP/k8s/kubeconfig' -n $NS get inferencepolicy $POLICY \
  -o jsonpath='{.status.observedGeneration}') == \$('$K8S_BIN/kubectl' --kubeconfig '$TMP/k8s/kubeconfig' -n $NS \
  get inferencepolicy $POLICY -o jsonpath='{.metadata.generation}') ]]" || die "the controller did not see the rollback"
kubectl get inferencepolicy "$POLICY"
kinference_k8s policy history "$POLICY"
sleep 1
load 5 policy-rolled-back
expect_only chat-a-0
echo "  the traffic is back on chat-a"

echo
echo "demo-k8s: done (logs were in $TMP, removed on exit)"
