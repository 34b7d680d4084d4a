#!/usr/bin/env bash
# `make bench-guidellm`: GuideLLM (PyPI, unmodified; scripts/guidellm-env.sh) and
# `kinference bench` drive the same load through the gateway (predicted-ttft) in front of
# two real vLLM replicas (CPU build, tiny model; the replicas of `make demo-vllm`), and
# their figures are reported side by side (docs/real-vllm.md explains how each measures).
#
# Load: the shared-prefix workload sized for the tiny model: 12 shared prefixes of ~3,600
# tokens, ~180 unique tokens, 32 output tokens (ignore_eos), as
#   - a Poisson profile (GUIDELLM_RATE requests/s, default 1.5) and
#   - a concurrent profile (GUIDELLM_CONCURRENCY streams, default 4),
# GUIDELLM_REQUESTS requests each (default 200). kinference bench sizes its text in words of
# its synthetic generator (1,000-word prefixes + 50 words, ~3,600 + ~180 tokens of the tiny
# model's tokenizer); GuideLLM sizes it in tokens of that tokenizer (--tokenizer = the model
# folder). Before every run the replicas' prefix caches are emptied and the gateway restarts.
# Results: results/guidellm/summary.json, results/guidellm/<profile>-{guidellm,kinference}.json
# and a table on stdout.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${BUILD:-build}
BIN=${KINFERENCE_BIN:-$BUILD/kinference}
RATE=${GUIDELLM_RATE:-1.5}
CONCURRENCY=${GUIDELLM_CONCURRENCY:-4}
REQUESTS=${GUIDELLM_REQUESTS:-200}
OUT=results/guidellm
[[ -x $BIN ]] || { echo "bench-guidellm: $BIN not found; run 'make build' first" >&2; exit 1; }

eval "$(bash scripts/guidellm-env.sh)"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/kinference-guidellm.XXXXXX")
GW_PID=""
stop_gateway() {
  if [[ -n $GW_PID ]]; then kill "$GW_PID" 2>/dev/null || true; wait "$GW_PID" 2>/dev/null || true; fi
  GW_PID=""
}
cleanup() {
  stop_gateway
  bash scripts/vllm-serve.sh stop "$TMP/vllm" || true
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$SECONDS
VLLM_SERVER_DEV_MODE=1 bash scripts/vllm-serve.sh start "$TMP/vllm" 2 \
  --num-gpu-blocks-override 224 --max-model-len 8192
# shellcheck disable=SC1091
source "$TMP/vllm/env"
endpoints=""
for url in $VLLM_URLS; do endpoints+="\"$url\", "; done
cat >"$TMP/gateway.yaml" <<EOF
listen: {address: 127.0.0.1, port: 0}
strategy: predicted-ttft
scrape_interval_s: 0.25
time_scale: 1
request_timeout_s: 600
pools:
  - name: demo
    model: $VLLM_MODEL
    endpoints: [${endpoints%, }]
EOF

# fresh_cluster: empty prefix caches, a new gateway; sets GATEWAY_URL.
fresh_cluster() {
  local url line port=""
  stop_gateway
  for url in $VLLM_URLS; do curl -fsS -X POST "$url/reset_prefix_cache" >/dev/null; done
  "$BIN" gateway --config "$TMP/gateway.yaml" >"$TMP/gateway.log" 2>&1 &
  GW_PID=$!
  for _ in $(seq 1 300); do
    line=$(grep -m1 'listening on' "$TMP/gateway.log" || true)
    if [[ -n $line ]]; then port=${line##*:}; break; fi
    sleep 0.1
  done
  [[ -n $port ]] || { cat "$TMP/gateway.log" >&2; return 1; }
  GATEWAY_URL="http://127.0.0.1:$port"
}

mkdir -p "$OUT"
rm -rf "$OUT"/*.json "$OUT/requests"
DATA='{"kind":"synthetic_text","prompt_tokens":180,"output_tokens":32,"prefix_buckets":[{"prefix_count":12,"prefix_tokens":3600}]}'
for profile in "poisson@$RATE" "concurrent@$CONCURRENCY"; do
  kind=${profile%@*}
  value=${profile#*@}
  if [[ $kind == poisson ]]; then
    gl_profile="kind=poisson,rate=$value"
    kb_load=(--rate "$value")
  else
    gl_profile="kind=concurrent,streams=$value"
    kb_load=(--concurrency "$value")
  fi

  fresh_cluster
  echo "== $profile: GuideLLM $($GUIDELLM --version | grep -o '[0-9][0-9.]*$') -> $GATEWAY_URL"
  # One worker process: GuideLLM 0.8.1 seeds every worker's Poisson generator alike
  # (random.Random(42) in AsyncPoissonStrategy.next_request_time), so with its default 10
  # workers each inter-arrival gap repeats 10 times and a 200-request run at rate 1.5 arrived
  # at 2.35 requests/s (measured). One asyncio worker carries this load.
  GUIDELLM__MAX_WORKER_PROCESSES=1 HF_HUB_OFFLINE=1 "$GUIDELLM" run --backend "kind=openai_http,target=$GATEWAY_URL" \
    --profile "$gl_profile" --constraint "kind=max_requests,count=$REQUESTS" \
    --tokenizer "kind=huggingface_auto,model=$VLLM_MODEL_DIR" --data "$DATA" \
    --output "kind=json,path=$OUT/$kind-guidellm.json" --disable-progress >"$TMP/guidellm.log" 2>&1 || {
    tail -n 40 "$TMP/guidellm.log" >&2
    exit 1
  }

  fresh_cluster
  echo "== $profile: kinference bench -> $GATEWAY_URL"
  "$BIN" bench --target "$GATEWAY_URL" --strategy predicted-ttft --workload shared-prefix \
    --sessions "$REQUESTS" \
    "${kb_load[@]}" --seed 1 --prefixes 12 --prefix-tokens 1000 --suffix-tokens 50 \
    --output-tokens 32 --label "$kind" --summary "$OUT/$kind-kinference.json" \
    --out "$OUT/requests" >/dev/null
done
stop_gateway

python3 scripts/guidellm_report.py "$OUT" "$RATE" "$CONCURRENCY"
echo "(results: $OUT/; $((SECONDS - t0)) s wall)"
