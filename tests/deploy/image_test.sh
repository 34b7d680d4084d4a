#!/usr/bin/env bash
# The container image, built without a registry (scripts/image-airgap.sh: a Debian 12 base
# from Debian's packages with mmdebstrap, `podman build` of deploy/image/Containerfile.prebuilt)
# and started with podman against an engine-sim on the host: non-root (65532), read-only root
# file system, the gateway answering a chat completion through the container, its admin port
# serving /metrics with kinference_build_info naming the commit. Prints the image's size.
# Usage: tests/deploy/image_test.sh KINFERENCE_BINARY   (`make test-image`)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:?usage: image_test.sh KINFERENCE_BINARY}
TAG=localhost/kinference:image-test
WORK=$(mktemp -d)
NAME=kinference-image-test-$$
ENGINE_PID=
cleanup() {
  podman rm -f "$NAME" >/dev/null 2>&1
  [[ -n $ENGINE_PID ]] && kill "$ENGINE_PID" 2>/dev/null && wait "$ENGINE_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
ok() { echo "ok - $*"; }
fail() {
  echo "FAIL - $*"
  failures=$((failures + 1))
}
if ! bash "$ROOT/scripts/image-airgap.sh" "$BIN" "$TAG" >"$WORK/build.log" 2>&1; then
  fail "image-airgap.sh: $(tail -5 "$WORK/build.log")"
  exit 1
fi
ok "$(tail -1 "$WORK/build.log")"
# Where the sandbox refuses podman's default rlimits and cgroups (no CAP_SYS_RESOURCE,
# hybrid cgroups: crun says "setrlimit RLIMIT_NOFILE: Operation not permitted" and "cgroups
# in hybrid mode not supported"), runc with cgroupfs and lowered limits runs the container.
PODMAN=(podman)
RUN_FLAGS=(--ulimit nofile=4096:4096 --ulimit nproc=4096:4096)
if ! podman run --rm "${RUN_FLAGS[@]}" "$TAG" --version >/dev/null 2>&1 && command -v runc >/dev/null; then
  PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
fi
version=$("${PODMAN[@]}" run --rm "${RUN_FLAGS[@]}" "$TAG" --version 2>&1)
commit=$("$BIN" --version | sed -n 's/.*commit \([0-9a-f]*\).*/\1/p')
[[ -n $commit && $version == *"$commit"* ]] && ok "kinference --version in the image names commit $commit" ||
  fail "kinference --version in the image: '$version' (want commit '$commit')"
user=$(podman image inspect --format '{{.Config.User}}' "$TAG")
[[ $user == 65532:65532 ]] && ok "image user $user" || fail "image user '$user', want 65532:65532"
size=$(podman image inspect --format '{{.Size}}' "$TAG")
echo "image size: $size bytes ($((size / 1048576)) MiB)"

# An engine-sim on the host; the containerized gateway reaches it over the host network.
"$BIN" engine-sim --host 127.0.0.1 --port 0 --served-model-name m --time-scale 50 \
  >"$WORK/engine.out" 2>"$WORK/engine.err" &
ENGINE_PID=$!
for _ in $(seq 1 150); do
  ENGINE_PORT=$(sed -n 's/^engine-sim listening on .*:\([0-9]*\)$/\1/p' "$WORK/engine.out")
  [[ -n $ENGINE_PORT ]] && break
  sleep 0.2
done
[[ -n ${ENGINE_PORT:-} ]] || { fail "engine-sim did not start"; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
API=$(free_port)
ADMIN=$(free_port)
mkdir -p "$WORK/config"
cat >"$WORK/config/gateway.yaml" <<YAML
listen: {address: 127.0.0.1, port: $API}
admin_listen: {address: 127.0.0.1, port: $ADMIN}
time_scale: 50
pools: [{name: p, model: m, endpoints: ["http://127.0.0.1:$ENGINE_PORT"]}]
YAML
chmod -R a+rX "$WORK"
"${PODMAN[@]}" run -d --name "$NAME" "${RUN_FLAGS[@]}" --network=host --read-only \
  --user 65532:65532 --cap-drop=ALL --security-opt no-new-privileges \
  -v "$WORK/config:/etc/kinference:ro" "$TAG" gateway --config /etc/kinference/gateway.yaml \
  >/dev/null 2>"$WORK/run.err" || fail "podman run: $(cat "$WORK/run.err")"
up=no
for _ in $(seq 1 150); do
  curl -fsS "http://127.0.0.1:$ADMIN/ready" >/dev/null 2>&1 && up=yes && break
  sleep 0.2
done
[[ $up == yes ]] && ok "containerized gateway ready (read-only root, user 65532, no capabilities)" ||
  fail "containerized gateway not ready: $(podman logs "$NAME" 2>&1 | tail -5)"
code=$(curl -sS -o "$WORK/chat.json" -w '%{http_code}' "http://127.0.0.1:$API/v1/chat/completions" \
  -H 'Content-Type: application/json' -d '{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}')
[[ $code == 200 ]] && grep -q '"choices"' "$WORK/chat.json" &&
  ok "chat completion through the container: 200" || fail "chat completion: HTTP $code $(head -c 300 "$WORK/chat.json")"
curl -fsS "http://127.0.0.1:$ADMIN/metrics" | grep -q "kinference_build_info{.*revision=\"$commit" &&
  ok "admin port /metrics: kinference_build_info names $commit" ||
  fail "admin port /metrics: no kinference_build_info with commit $commit"
uid=$(podman top "$NAME" user 2>/dev/null | tail -1 | tr -d ' ')
[[ $uid == 65532 || $uid == kinference ]] && ok "the process runs as $uid" || fail "the process runs as '$uid'"
podman rmi "$TAG" >/dev/null 2>&1
((failures > 0)) && { echo "image_test: $failures check(s) failed"; exit 1; }
echo "image_test: all checks passed"
