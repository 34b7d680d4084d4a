#!/usr/bin/env bash
# The fronts Kinference is compared with in `make bench-gateway` and `make bench-peers`:
#   - nginx (Debian's nginx-light package, installed with apt when missing);
#   - sglang-router (the SGLang model gateway, Rust, PyPI wheel) and vllm-router (the vLLM
#     project's Rust router, PyPI wheel), each in its own virtual environment cached outside
#     the clone, keyed by version:
#       ${KINFERENCE_CACHE:-~/.cache/kinference}/peer-sglang-router-<version>/venv
#       ${KINFERENCE_CACHE:-~/.cache/kinference}/peer-vllm-router-<version>/venv
# A no-op when everything is there. Prints shell assignments for the callers:
#   NGINX=... SGLANG_ROUTER=... VLLM_ROUTER=...
# Versions pinned here: sglang-router 0.3.2 and vllm-router 0.1.17 (the releases on PyPI on
# 2026-12-01).
set -euo pipefail

SGLANG_ROUTER_VERSION=0.3.2
VLLM_ROUTER_VERSION=0.1.17
CACHE="${KINFERENCE_CACHE:-$HOME/.cache/kinference}"
mkdir -p "$CACHE"
exec 9>"$CACHE/.peers-env.lock"
flock 9

if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "peers-env: installing nginx-light (apt)" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq >&2
  $SUDO apt-get install -y -qq --no-install-recommends nginx-light </dev/null >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

# venv_with NAME VERSION: a venv holding PyPI package NAME==VERSION; prints its folder.
venv_with() {
  local name=$1 version=$2 dir="$CACHE/peer-$1-$2"
  if [[ ! -f $dir/.complete ]]; then
    echo "peers-env: installing $name==$version into $dir" >&2
    rm -rf "$dir"
    python3 -m venv "$dir/venv" >&2
    "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "$name==$version" >&2
    touch "$dir/.complete"
  fi
  echo "$dir/venv"
}

sglang=$(venv_with sglang-router "$SGLANG_ROUTER_VERSION")
vllm=$(venv_with vllm-router "$VLLM_ROUTER_VERSION")
echo "NGINX=$NGINX"
echo "SGLANG_ROUTER=\"$sglang/bin/python -m sglang_router.launch_router\""
echo "VLLM_ROUTER=$vllm/bin/vllm-router"
