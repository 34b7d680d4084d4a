#!/usr/bin/env bash
# The Helm chart (deploy/helm/kinference) against a real API server (scripts/k8s-testenv.sh):
#  - helm lint --strict; helm template with several value sets, checked object by object
#    (tests/deploy/check_rendered.py); the values schema refuses unknown keys;
#  - the chart's CRDs and the InferencePool fixture applied with kubectl and Established;
#    the examples in examples/kubernetes/ and examples/policies/ accepted by the API server
#    (server-side dry run);
#  - helm install (release namespace kinference-system, watching team-a), upgrade, uninstall
#    (CRDs stay, as Helm does);
#  - RBAC: tokens of the chart's ServiceAccounts (kubectl create token) may do exactly what
#    the controller and the gateway do, and nothing more (kubectl auth can-i --token);
#  - and is enough: `kinference controller` run with the controller's token (a kubeconfig
#    holding only that token, the chart's args) syncs every cache, takes the Lease, accepts the
#    examples and writes their status and revisions without a single 403.
# Prints one "ok"/"FAIL" line per check; exits non-zero if any failed.
# Usage: tests/deploy/helm_chart_test.sh KINFERENCE_BINARY
#   (tools from scripts/k8s-tools.sh; make test builds them)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CHART="$ROOT/deploy/helm/kinference"
KINFERENCE=${1:?usage: helm_chart_test.sh KINFERENCE_BINARY}
BIN=$(bash "$ROOT/scripts/k8s-tools.sh" --print-dir)
for t in kubectl helm; do
  [[ -x $BIN/$t ]] || {
    echo "FAIL: $BIN/$t missing: run scripts/k8s-tools.sh (make test does)"
    exit 1
  }
done
WORK=$(mktemp -d)
ENVDIR="$WORK/k8s"
cleanup() {
  bash "$ROOT/scripts/k8s-testenv.sh" stop "$ENVDIR" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config"
export HELM_DATA_HOME="$WORK/helm/data"
failures=0
ok() { echo "ok - $*"; }
fail() {
  echo "FAIL - $*"
  failures=$((failures + 1))
}
# check DESCRIPTION COMMAND...: runs it, shows its output on failure.
check() {
  local what=$1 out
  shift
  if out=$("$@" 2>&1); then ok "$what"; else
    fail "$what"
    echo "$out" | tail -30 | sed 's/^/    /'
  fi
}
helm() { "$BIN/helm" "$@"; }
kubectl() { "$BIN/kubectl" "$@"; }

# --- Without a server: lint and render.
check "helm lint --strict" helm lint --strict "$CHART"
check "helm lint --strict (serviceMonitor, another watched namespace)" helm lint --strict "$CHART" \
  --set serviceMonitor.enabled=true --set watchNamespace=team-a
render() { helm template kinference "$CHART" --namespace kinference-system "$@"; }
render >"$WORK/default.yaml" 2>&1 && ok "helm template: defaults" || fail "helm template: defaults"
check "rendered defaults: objects, security, probes, least-privilege RBAC" \
  python3 "$ROOT/tests/deploy/check_rendered.py" defaults "$WORK/default.yaml"
render --set serviceMonitor.enabled=true --set watchNamespace=team-a \
  --set controller.enabled=false --set grafanaDashboard.enabled=true \
  --set grafanaDashboard.annotations.grafana_folder=Kinference >"$WORK/custom.yaml" 2>&1 ||
  fail "helm template: custom values"
check "rendered custom values: ServiceMonitor, Roles in the watched namespace, no controller, Grafana dashboard ConfigMap" \
  python3 "$ROOT/tests/deploy/check_rendered.py" custom "$WORK/custom.yaml"
if render --set bogus=1 >"$WORK/bogus.out" 2>&1; then
  fail "values schema refuses an unknown key"
else
  grep -q "bogus" "$WORK/bogus.out" && ok "values schema refuses an unknown key" ||
    fail "values schema error does not name the key: $(head -3 "$WORK/bogus.out")"
fi
if render --set gateway.config.listen.port=1 >"$WORK/listen.out" 2>&1; then
  fail "values schema refuses gateway.config.listen.port (set from gateway.port)"
else ok "values schema refuses gateway.config.listen.port (set from gateway.port)"; fi
if render --set gateway.config.admin_listen.port=1 >"$WORK/admin.out" 2>&1; then
  fail "values schema refuses gateway.config.admin_listen (set from gateway.adminPort)"
else ok "values schema refuses gateway.config.admin_listen (set from gateway.adminPort)"; fi
if render --set 'gateway.config.pools[0].name=p' --set 'gateway.config.pools[0].max_in_flight=-1' \
  >"$WORK/pool.out" 2>&1; then
  fail "values schema refuses a negative pools[].max_in_flight"
else ok "values schema refuses a negative pools[].max_in_flight"; fi
# Every optional feature (tests/deploy/values-full.yaml), release "kinference".
render -f "$ROOT/tests/deploy/values-full.yaml" >"$WORK/full.yaml" 2>&1 || {
  fail "helm template: values-full.yaml"
  head -5 "$WORK/full.yaml"
}
check "rendered values-full.yaml: pool settings, Secret references, volumes, ledger PVC, NetworkPolicy, PrometheusRule, controller metrics/PDB, digest" \
  python3 "$ROOT/tests/deploy/check_rendered.py" full "$WORK/full.yaml"
check "helm lint --strict -f values-full.yaml" helm lint --strict "$CHART" -f "$ROOT/tests/deploy/values-full.yaml"
# The gateway's own parser accepts that config file as --kubernetes reads it: the config is
# parsed before the cluster is resolved, so with no kubeconfig it stops there (exit 2)
# without a "gateway config:" error.
python3 "$ROOT/tests/deploy/check_rendered.py" gateway-config "$WORK/full.yaml" >"$WORK/full-gateway.yaml"
KUBECONFIG=/nonexistent "$KINFERENCE" gateway --kubernetes --config "$WORK/full-gateway.yaml" \
  --kubeconfig /nonexistent >/dev/null 2>"$WORK/full-gateway.err"
if grep -q "gateway config:" "$WORK/full-gateway.err"; then
  fail "the gateway refuses values-full.yaml's config: $(grep 'gateway config:' "$WORK/full-gateway.err" | head -1)"
elif grep -q "/nonexistent" "$WORK/full-gateway.err"; then
  ok "the gateway's parser accepts values-full.yaml's config (pools settings, tls, accounting)"
else fail "the gateway with values-full.yaml's config: $(tail -2 "$WORK/full-gateway.err")"; fi
# Another release name: objects and the PrometheusRule's job follow the fullname.
helm template prod "$CHART" --namespace kinference-system --set serviceMonitor.enabled=true \
  --set prometheusRule.enabled=true >"$WORK/prod.yaml" 2>&1 || fail "helm template: release prod"
check "release prod: prod-kinference-* objects; PrometheusRule job = gateway Service name" \
  python3 "$ROOT/tests/deploy/check_rendered.py" names "$WORK/prod.yaml" prod
helm template kinference "$CHART" --namespace kinference-system --set serviceMonitor.enabled=true \
  --set prometheusRule.enabled=true --set fullnameOverride=kinference-edge >"$WORK/edge.yaml" 2>&1 ||
  fail "helm template: fullnameOverride"
check "fullnameOverride kinference-edge: PrometheusRule job = gateway Service name" \
  python3 "$ROOT/tests/deploy/check_rendered.py" names "$WORK/edge.yaml" kinference-edge
# A SQLite ledger the pods could not write, or could not share, is refused with a message.
refused() { # DESCRIPTION EXPECTED-TEXT helm-template-args...
  local what=$1 want=$2
  shift 2
  if render "$@" >"$WORK/refused.out" 2>&1; then fail "$what: rendered"
  elif grep -q "$want" "$WORK/refused.out"; then ok "$what"
  else fail "$what: $(tail -2 "$WORK/refused.out")"; fi
}
refused "accounting with a SQLite ledger and no persistence is refused" \
  "set gateway.persistence.enabled=true" --set gateway.config.accounting.estimate.output_tokens=256
refused "a SQLite ledger on the PVC with 2 replicas is refused" "use ledger.store: postgres" \
  --set gateway.config.accounting.estimate.output_tokens=256 --set gateway.persistence.enabled=true
render --set gateway.config.accounting.ledger.store=postgres \
  --set gateway.config.accounting.ledger.postgres=host=pg >"$WORK/pg.yaml" 2>&1 &&
  ok "accounting with PostgreSQL and 2 replicas renders" ||
  fail "accounting with PostgreSQL: $(tail -2 "$WORK/pg.yaml")"
render --set gateway.autoscaling.enabled=true --set gateway.adminPort=0 >"$WORK/hpa.yaml" 2>&1 ||
  fail "helm template: autoscaling, no admin port"
check "autoscaling: an HPA and no fixed replicas; adminPort 0: probes and metrics on http" \
  python3 - "$WORK/hpa.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
hpa = [d for d in docs if d["kind"] == "HorizontalPodAutoscaler"]
gw = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "kinference-gateway"][0]
ct = gw["spec"]["template"]["spec"]["containers"][0]
cm = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kinference-gateway"][0]
assert len(hpa) == 1 and hpa[0]["spec"]["scaleTargetRef"]["name"] == "kinference-gateway", hpa
assert "replicas" not in gw["spec"], gw["spec"]
assert ct["readinessProbe"]["httpGet"]["port"] == "http" and len(ct["ports"]) == 1, ct
assert "admin_listen" not in yaml.safe_load(cm["data"]["gateway.yaml"])
PY

# --- A real API server.
if ! K8S_TESTENV_NO_BUILD=1 K8S_TESTENV_WATCH_PID=$$ bash "$ROOT/scripts/k8s-testenv.sh" start \
  "$ENVDIR" >"$WORK/start.log" 2>&1; then
  fail "k8s-testenv start"
  cat "$WORK/start.log"
  exit 1
fi
export KUBECONFIG="$ENVDIR/kubeconfig"

crds=("$CHART"/crds/*.yaml)
check "kubectl apply the chart's CRDs (${#crds[@]} files)" kubectl apply -f "$CHART/crds/"
check "kubectl apply the InferencePool CRD fixture" \
  kubectl apply -f "$ROOT/tests/testing/k8s/inferencepools.inference.networking.k8s.io.yaml"
for crd in inferencepolicies.kinference.io inferenceproviders.kinference.io \
  inferencetenants.kinference.io inferencepools.inference.networking.k8s.io; do
  check "CRD $crd Established" kubectl wait --for condition=Established --timeout=60s "crd/$crd"
done
# Every kinference.io resource the Roles name has a CRD in the chart, and the other way round.
rbac_kinds=$(python3 "$ROOT/tests/deploy/check_rendered.py" kinference-resources "$WORK/default.yaml")
crd_kinds=$(kubectl get crd -o jsonpath='{range .items[?(@.spec.group=="kinference.io")]}{.spec.names.plural}{"\n"}{end}' | sort | tr '\n' ' ')
[[ $rbac_kinds == "$crd_kinds" ]] && ok "Roles cover exactly the chart's kinference.io CRDs ($crd_kinds)" ||
  fail "Roles name kinference.io resources [$rbac_kinds], the chart's CRDs are [$crd_kinds]"

check "namespaces" kubectl create namespace kinference-system
kubectl create namespace team-a >/dev/null
kubectl create namespace other >/dev/null
for f in "$ROOT"/examples/kubernetes/*.yaml "$ROOT"/examples/policies/*.yaml; do
  check "API server accepts ${f#"$ROOT"/} (server-side dry run)" \
    kubectl apply --dry-run=server -n team-a -f "$f"
done

# The rendered features, applied for real (the API server validates every object; it has no
# Prometheus Operator, so ServiceMonitors and PrometheusRules are left out).
kubectl create namespace kinference-full >/dev/null
render_full() { helm template kinference "$CHART" --namespace kinference-full "$@"; }
render_full -f "$ROOT/tests/deploy/values-full.yaml" >"$WORK/full-ns.yaml" &&
  python3 "$ROOT/tests/deploy/check_rendered.py" without-monitoring "$WORK/full-ns.yaml" >"$WORK/full-apply.yaml"
check "API server accepts values-full.yaml's objects (kubectl apply: PVC, NetworkPolicy, PDBs, controller metrics Service, Deployments)" \
  kubectl apply -f "$WORK/full-apply.yaml"
check "values-full.yaml: the gateway Deployment as stored keeps preStop, readiness on admin, the Secret env" \
  bash -c "'$BIN/kubectl' get deploy kinference-gateway -n kinference-full -o json | python3 -c '
import json, sys
d = json.load(sys.stdin)[\"spec\"][\"template\"][\"spec\"]
c = d[\"containers\"][0]
assert c[\"lifecycle\"][\"preStop\"][\"exec\"][\"command\"] == [\"/bin/sleep\", \"5\"]
assert c[\"readinessProbe\"][\"httpGet\"] == {\"path\": \"/ready\", \"port\": \"admin\", \"scheme\": \"HTTP\"}, c[\"readinessProbe\"]
assert any(e.get(\"valueFrom\", {}).get(\"secretKeyRef\", {}).get(\"name\") == \"vllm-api-key\" for e in c[\"env\"])
'"
render_full --set gateway.autoscaling.enabled=true >"$WORK/hpa-ns.yaml" &&
  python3 "$ROOT/tests/deploy/check_rendered.py" without-monitoring "$WORK/hpa-ns.yaml" >"$WORK/hpa-apply.yaml"
check "API server accepts the autoscaling variant (HorizontalPodAutoscaler autoscaling/v2)" \
  kubectl apply -f "$WORK/hpa-apply.yaml"
kubectl delete namespace kinference-full --wait=false >/dev/null 2>&1

check "helm install (release in kinference-system, watching team-a)" \
  helm install kinference "$CHART" --namespace kinference-system --set watchNamespace=team-a
check "helm status deployed" bash -c "'$BIN/helm' status kinference -n kinference-system | grep -q 'STATUS: deployed'"
check "Deployments, Service, PDB created" kubectl get -n kinference-system \
  deployment/kinference-controller deployment/kinference-gateway service/kinference-gateway \
  poddisruptionbudget/kinference-gateway configmap/kinference-gateway
check "helm upgrade (gateway replicas 3)" helm upgrade kinference "$CHART" -n kinference-system \
  --reuse-values --set gateway.replicas=3
check "upgrade applied" bash -c "[[ \$('$BIN/kubectl' get deploy kinference-gateway -n kinference-system -o jsonpath='{.spec.replicas}') == 3 ]]"

# --- RBAC, with the ServiceAccounts' own tokens.
token() { kubectl create token "$1" -n kinference-system --duration=10m; }
CTRL=$(token kinference-controller) || fail "token for kinference-controller"
GW=$(token kinference-gateway) || fail "token for kinference-gateway"
# A few questions exactly as an operator would ask them...
can() { # WHO TOKEN WANT NAMESPACE VERB RESOURCE
  local got
  got=$(kubectl auth can-i "$5" "$6" -n "$4" --token "$2" 2>/dev/null)
  [[ $got == "$3" ]] && ok "kubectl auth can-i $5 $6 -n $4 --token <$1> = $3" ||
    fail "kubectl auth can-i $5 $6 -n $4 --token <$1> = '$got', want $3"
}
can gateway "$GW" yes team-a watch pods
can gateway "$GW" no team-a create pods
can gateway "$GW" no other list secrets
can controller "$CTRL" yes team-a create controllerrevisions.apps
can controller "$CTRL" no team-a delete inferencepolicies.kinference.io
# ...and the whole matrix the same way (SelfSubjectAccessReviews), batched per identity.
: >"$WORK/access.tsv"
both() { # WANT_CONTROLLER WANT_GATEWAY NAMESPACE VERB RESOURCE [SUBRESOURCE]
  printf 'controller\t%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "$4" "$5" "${6:-}" >>"$WORK/access.tsv"
  printf 'gateway\t%s\t%s\t%s\t%s\t%s\n' "$2" "$3" "$4" "$5" "${6:-}" >>"$WORK/access.tsv"
}
KINDS="inferencepolicies.kinference.io inferenceproviders.kinference.io inferencetenants.kinference.io"
# In the watched namespace: exactly the verbs each process uses.
ns=team-a
for r in $KINDS inferencepools.inference.networking.k8s.io secrets configmaps; do
  for v in list watch; do both yes yes $ns $v "$r"; done
  for v in get create update patch delete deletecollection; do both no no $ns $v "$r"; done
done
for r in $KINDS; do
  both yes no $ns patch "$r" status
  both no no $ns update "$r" status
done
for v in list watch; do both no yes $ns $v pods; done
for v in get create update patch delete; do both no no $ns $v pods; done
for v in list watch create patch delete; do both yes no $ns $v controllerrevisions.apps; done
for v in get update deletecollection; do both no no $ns $v controllerrevisions.apps; done
both no no $ns create pods exec
both no no $ns get pods log
both no no $ns patch pods status
both no no $ns create events
both no no $ns create rolebindings.rbac.authorization.k8s.io
both no no $ns create serviceaccounts token
# Leader election: create a Lease, then get/update only the configured one.
both yes no $ns create leases.coordination.k8s.io
both yes no $ns get leases.coordination.k8s.io/kinference-controller
both yes no $ns update leases.coordination.k8s.io/kinference-controller
both no no $ns update leases.coordination.k8s.io/someone-else
both no no $ns delete leases.coordination.k8s.io/kinference-controller
both no no $ns list leases.coordination.k8s.io
# Anywhere else (the release namespace included): nothing. Secrets of other namespaces
# stay unreadable.
for other in kinference-system other default; do
  for r in secrets configmaps pods $KINDS inferencepools.inference.networking.k8s.io; do
    for v in list watch; do both no no $other $v $r; done
  done
  both no no $other create leases.coordination.k8s.io
done
both no no "*" list secrets
both no no "*" list pods
both no no "*" get customresourcedefinitions.apiextensions.k8s.io
for v in create update patch delete; do both no no "*" $v customresourcedefinitions.apiextensions.k8s.io; done
both no no "*" list nodes
both no no "*" create clusterrolebindings.rbac.authorization.k8s.io
while IFS= read -r line; do
  [[ $line == ok* ]] && echo "$line" || {
    echo "$line"
    failures=$((failures + 1))
  }
done < <(python3 "$ROOT/tests/deploy/access_reviews.py" "$BIN/kubectl" "$WORK/access.tsv" \
  controller="$CTRL" gateway="$GW" || echo "FAIL - access_reviews.py exited $?")

# The same, as real requests: reads and a status write succeed, writes beyond that are 403.
kubectl -n team-a create secret generic unrelated --from-literal=k=v >/dev/null
kubectl -n other create secret generic elsewhere --from-literal=k=v >/dev/null
check "gateway token lists pods in team-a" kubectl get pods -n team-a --token "$GW"
check "gateway token lists secrets in team-a" kubectl get secrets -n team-a --token "$GW"
check "controller token lists InferencePolicies in team-a" kubectl get inferencepolicies -n team-a --token "$CTRL"
kubectl apply -n team-a -f - >/dev/null <<'EOF'
apiVersion: kinference.io/v1alpha1
kind: InferencePolicy
metadata: {name: rbac-probe}
spec: {}
EOF
# PATCH as the controller sends it (kubectl patch would GET first, which it need not do).
api_patch() { # TOKEN PATH JSON -> HTTP status
  curl -sS -o /dev/null -w '%{http_code}' -X PATCH --cacert "$ENVDIR/certs/apiserver.crt" \
    -H "Authorization: Bearer $1" -H 'Content-Type: application/merge-patch+json' \
    --data "$3" "$(sed -n 's/^K8S_SERVER=//p' "$ENVDIR/env")$2"
}
POLICY=/apis/kinference.io/v1alpha1/namespaces/team-a/inferencepolicies/rbac-probe
code=$(api_patch "$CTRL" "$POLICY/status" '{"status":{"observedGeneration":1}}')
[[ $code == 200 ]] && ok "controller token PATCHes an InferencePolicy's status (200)" ||
  fail "controller token PATCHes an InferencePolicy's status: HTTP $code"
code=$(api_patch "$CTRL" "$POLICY" '{"spec":{"priority":5}}')
[[ $code == 403 ]] && ok "controller token PATCHes an InferencePolicy's spec: 403" ||
  fail "controller token PATCHes an InferencePolicy's spec: HTTP $code, want 403"
code=$(api_patch "$GW" "$POLICY/status" '{"status":{"observedGeneration":2}}')
[[ $code == 403 ]] && ok "gateway token PATCHes an InferencePolicy's status: 403" ||
  fail "gateway token PATCHes an InferencePolicy's status: HTTP $code, want 403"
forbidden() { # DESCRIPTION kubectl-args...
  local what=$1 out
  shift
  if out=$(kubectl "$@" 2>&1); then fail "$what: succeeded"; else
    grep -q Forbidden <<<"$out" && ok "$what: Forbidden" || fail "$what: $out"
  fi
}
forbidden "gateway token lists secrets in another namespace" get secrets -n other --token "$GW"
forbidden "gateway token reads a named secret" get secret unrelated -n team-a --token "$GW"
forbidden "gateway token creates a pod" run p --image=x -n team-a --token "$GW"
forbidden "controller token deletes a CRD" delete crd inferencepolicies.kinference.io --token "$CTRL"

# --- The controller itself, with nothing but its ServiceAccount's token.
SERVER=$(sed -n 's/^K8S_SERVER=//p' "$ENVDIR/env")
sa_kubeconfig() { # FILE TOKEN: a kubeconfig holding only TOKEN
  kubectl config set-cluster test --server "$SERVER" --certificate-authority \
    "$ENVDIR/certs/apiserver.crt" --embed-certs --kubeconfig "$1" >/dev/null
  kubectl config set-credentials sa --token "$2" --kubeconfig "$1" >/dev/null
  kubectl config set-context test --cluster test --user sa --kubeconfig "$1" >/dev/null
  kubectl config use-context test --kubeconfig "$1" >/dev/null
}
SA_KUBECONFIG="$WORK/controller.kubeconfig"
sa_kubeconfig "$SA_KUBECONFIG" "$CTRL"
# The same objects a user would apply: the example provider and tenant with their Secrets,
# the example policies.
kubectl delete inferencepolicy rbac-probe -n team-a >/dev/null
for f in "$ROOT"/examples/kubernetes/inference{provider,tenant,policy}.yaml "$ROOT"/examples/policies/*.yaml; do
  kubectl apply -n team-a -f "$f" >/dev/null || fail "kubectl apply ${f#"$ROOT"/}"
done
# The args of templates/controller-deployment.yaml, listening on loopback.
mapfile -t args < <(python3 "$ROOT/tests/deploy/check_rendered.py" controller-args "$WORK/default.yaml" |
  sed -e 's/^--namespace=.*/--namespace=team-a/' -e 's/^--listen=.*/--listen=127.0.0.1:0/')
"$KINFERENCE" "${args[@]}" --kubeconfig "$SA_KUBECONFIG" \
  >"$WORK/controller.out" 2>"$WORK/controller.err" &
CONTROLLER_PID=$!
stop_controller() {
  kill "$CONTROLLER_PID" 2>/dev/null && wait "$CONTROLLER_PID" 2>/dev/null
  CONTROLLER_PID=
}
trap 'stop_controller; cleanup' EXIT
port=
for _ in $(seq 1 300); do
  port=$(sed -n 's/^controller listening on .*:\([0-9]*\)$/\1/p' "$WORK/controller.out")
  [[ -n $port ]] && break
  kill -0 "$CONTROLLER_PID" 2>/dev/null || break
  sleep 0.2
done
ready=no
if [[ -n $port ]]; then
  for _ in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && ready=yes && break
    sleep 0.2
  done
fi
[[ $ready == yes ]] && ok "controller with its token: every cache synced (/readyz 200)" ||
  fail "controller with its token: /readyz never 200 (port '$port'): $(tail -5 "$WORK/controller.err")"
# wait_for DESCRIPTION COMMAND...: retried for up to 60 s.
wait_for() {
  local what=$1 i
  shift
  for i in $(seq 1 300); do
    "$@" >/dev/null 2>&1 && {
      ok "$what"
      return
    }
    sleep 0.2
  done
  fail "$what (60 s)"
}
jp() { kubectl get -n team-a "$1" -o jsonpath="$2" 2>/dev/null; }
wait_for "controller with its token holds Lease kinference-controller" \
  bash -c "[[ -n \$('$BIN/kubectl' get lease kinference-controller -n team-a -o jsonpath='{.spec.holderIdentity}') ]]"
accepted() { [[ $(jp "$1" '{.status.conditions[?(@.type=="Accepted")].status}') == True ]]; }
revisions() { [[ $(jp "$1" '{.status.currentRevision}') == 1 ]]; }
for obj in inferenceprovider/openai inferencetenant/team-a \
  $(kubectl get inferencepolicies -n team-a -o name | sed "s|.*/|inferencepolicy/|"); do
  wait_for "controller with its token: $obj status Accepted=True" accepted "$obj"
done
for p in $(kubectl get inferencepolicies -n team-a -o name); do
  wait_for "controller with its token: ${p##*/} at revision 1" revisions "inferencepolicy/${p##*/}"
done
n_policies=$(kubectl get inferencepolicies -n team-a -o name | wc -l)
n_revisions=$(kubectl get controllerrevisions -n team-a -o name | wc -l)
[[ $n_revisions == "$n_policies" ]] && ok "controller with its token: one ControllerRevision per policy ($n_revisions)" ||
  fail "controller with its token: $n_revisions ControllerRevisions for $n_policies policies"
kubectl patch inferencepolicy team-a-local-first -n team-a --type=merge -p '{"spec":{"priority":60}}' >/dev/null
wait_for "controller with its token: an edited policy gets revision 2" \
  bash -c "[[ \$('$BIN/kubectl' get inferencepolicy team-a-local-first -n team-a -o jsonpath='{.status.currentRevision}') == 2 ]]"
stop_controller
# src/k8s logs a refusal as "HTTP 403" (and the API server's reason says Forbidden); a bare
# 403 would also match a log timestamp's milliseconds.
if grep -qiE 'HTTP 403|forbidden' "$WORK/controller.err"; then
  fail "controller with its token logged a refusal:"
  grep -iE 'HTTP 403|forbidden' "$WORK/controller.err" | head -5 | sed 's/^/    /'
else ok "controller with its token: no 403 in its log"; fi

# --- The gateway, with nothing but its ServiceAccount's token and the chart's config file,
# serving the example objects above and the example InferencePool (its port moved to where an
# engine-sim "pod" listens on 127.0.0.2).
GW_KUBECONFIG="$WORK/gateway.kubeconfig"
sa_kubeconfig "$GW_KUBECONFIG" "$GW"
# listening_port PID FILE NAME: waits for "NAME listening on HOST:PORT" in FILE -> PORT.
listening_port() {
  local p
  for _ in $(seq 1 300); do
    p=$(sed -n "s/^$3 listening on .*:\([0-9]*\)\$/\1/p" "$2")
    [[ -n $p ]] && echo "$p" && return 0
    kill -0 "$1" 2>/dev/null || return 1
    sleep 0.2
  done
  return 1
}
"$KINFERENCE" engine-sim --host 127.0.0.2 --port 0 --served-model-name qwen3-8b --time-scale 50 \
  >"$WORK/engine.out" 2>"$WORK/engine.err" &
ENGINE_PID=$!
GATEWAY_PID=
stop_gateway() {
  for pid in $GATEWAY_PID $ENGINE_PID; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  GATEWAY_PID= ENGINE_PID=
}
trap 'stop_controller; stop_gateway; cleanup' EXIT
ENGINE_PORT=$(listening_port "$ENGINE_PID" "$WORK/engine.out" engine-sim) ||
  fail "engine-sim did not start: $(tail -3 "$WORK/engine.err")"
sed "s/number: 8000/number: $ENGINE_PORT/" "$ROOT/examples/kubernetes/inferencepool.yaml" |
  kubectl apply -n team-a -f - >/dev/null
kubectl apply -n team-a -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: vllm-qwen3-8b-0, labels: {app: vllm-qwen3-8b}}
spec: {containers: [{name: vllm, image: vllm/vllm-openai:v0.32.0}]}
EOF
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
kubectl patch pod vllm-qwen3-8b-0 -n team-a --subresource=status --type=merge -p \
  "{\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0.0.2\",\"podIPs\":[{\"ip\":\"127.0.0.2\"}],
   \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
python3 "$ROOT/tests/deploy/check_rendered.py" gateway-config "$WORK/default.yaml" >"$WORK/gateway.yaml"
# The args of templates/gateway-deployment.yaml, the config file and namespace moved here.
mapfile -t args < <(python3 "$ROOT/tests/deploy/check_rendered.py" gateway-args "$WORK/default.yaml" |
  sed -e 's/^--namespace=.*/--namespace=team-a/' -e "s|^--config=.*|--config=$WORK/gateway.yaml|")
"$KINFERENCE" "${args[@]}" --kubeconfig "$GW_KUBECONFIG" >"$WORK/gateway.out" 2>"$WORK/gateway.err" &
GATEWAY_PID=$!
if GATEWAY_PORT=$(listening_port "$GATEWAY_PID" "$WORK/gateway.out" gateway); then
  ok "gateway with its token and the chart's config starts (port $GATEWAY_PORT)"
else
  fail "gateway with its token and the chart's config: $(tail -5 "$WORK/gateway.err")"
fi
GATEWAY_URL="http://127.0.0.1:$GATEWAY_PORT"
# The chart's admin port (admin_listen): metrics there, not on the API port.
ADMIN_PORT=$(sed -n 's/^gateway admin listening on .*:\([0-9]*\)$/\1/p' "$WORK/gateway.out")
code_of() { curl -sS -o /dev/null -w '%{http_code}' "$1"; }
[[ -n $ADMIN_PORT && $(code_of "http://127.0.0.1:$ADMIN_PORT/metrics") == 200 &&
  $(code_of "$GATEWAY_URL/metrics") == 404 ]] &&
  ok "gateway with the chart's config: /metrics on the admin port ($ADMIN_PORT), 404 on the API port" ||
  fail "gateway with the chart's config: admin port '$ADMIN_PORT', /metrics on the API port $(code_of "$GATEWAY_URL/metrics")"
KEY=sk-team-a-ci-replace-me # examples/kubernetes/inferencetenant.yaml
chat() { # API_KEY -> HTTP status of a chat completion for qwen3-8b
  curl -sS -o "$WORK/chat.json" -w '%{http_code}' "$GATEWAY_URL/v1/chat/completions" \
    -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -d '{"model":"qwen3-8b","max_tokens":8,"messages":[{"role":"user","content":"hello"}]}'
}
# With InferenceTenants, every API route needs a tenant's key.
wait_for "gateway with its token: the pool's pod serves qwen3-8b (/v1/models)" \
  bash -c "curl -fsS -H 'Authorization: Bearer $KEY' '$GATEWAY_URL/v1/models' | grep -q '\"qwen3-8b\"'"
wait_for "gateway with its token: tenant team-a's key from its Secret is accepted (chat 200)" \
  bash -c "[[ \$(curl -sS -o /dev/null -w '%{http_code}' '$GATEWAY_URL/v1/chat/completions' \
    -H 'Authorization: Bearer $KEY' -H 'Content-Type: application/json' \
    -d '{\"model\":\"qwen3-8b\",\"max_tokens\":8,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}') == 200 ]]"
code=$(chat sk-not-a-key)
[[ $code == 401 ]] && ok "gateway with its token: an unknown key is refused (401)" ||
  fail "gateway with its token: an unknown key got HTTP $code, want 401"
stop_gateway
if grep -qiE 'HTTP 403|forbidden' "$WORK/gateway.err"; then
  fail "gateway with its token logged a refusal:"
  grep -iE 'HTTP 403|forbidden' "$WORK/gateway.err" | head -5 | sed 's/^/    /'
else ok "gateway with its token: no 403 in its log"; fi

# --- Uninstall: the release's objects go, the CRDs stay (Helm never deletes crds/).
check "helm uninstall" helm uninstall kinference -n kinference-system
check "release objects removed" bash -c "! '$BIN/kubectl' get deploy,sa,role -n kinference-system -o name 2>/dev/null | grep -q kinference"
check "CRDs kept after uninstall" kubectl get crd inferencepolicies.kinference.io

echo
if ((failures > 0)); then
  echo "helm_chart_test: $failures check(s) failed"
  exit 1
fi
echo "helm_chart_test: all checks passed"
