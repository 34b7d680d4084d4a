#!/usr/bin/env bash
# GuideLLM (PyPI, unmodified, pinned) in its own virtual environment, cached outside the
# clone and reused: ${KINFERENCE_CACHE:-~/.cache/kinference}/guidellm-<VERSION>/venv.
#
# Usage: scripts/guidellm-env.sh
#   Prints one line for `eval`: GUIDELLM=<venv>/bin/guidellm (progress goes to stderr).
# GuideLLM requires torch; PyPI's torch is the CUDA build with its nvidia-* wheels, so the
# venv is ~6 GB (measured: guidellm 0.8.1 pulls torch 2.15.0). Complete once `.complete`
# exists; an interrupted install is redone. Safe to run concurrently (flock).
set -euo pipefail

GUIDELLM_VERSION=0.8.1
UV_VERSION=0.13.9
CACHE="${KINFERENCE_CACHE:-$HOME/.cache/kinference}"
ENV_DIR="$CACHE/guidellm-$GUIDELLM_VERSION"
VENV="$ENV_DIR/venv"

log() { echo "guidellm-env: $*" >&2; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.guidellm-env.lock"
flock 9

if [[ ! -f $ENV_DIR/.complete ]]; then
  command -v python3 >/dev/null || { log "python3 is required (scripts/install-deps.sh)"; exit 1; }
  log "installing guidellm==$GUIDELLM_VERSION into $VENV (one time; ~3.5 GB download)"
  t0=$SECONDS
  rm -rf "$ENV_DIR"
  mkdir -p "$ENV_DIR"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION" >&2
  UV_CACHE_DIR="$ENV_DIR/uv-cache" "$VENV/bin/uv" pip install --quiet --compile-bytecode \
    --python "$VENV/bin/python" "guidellm==$GUIDELLM_VERSION" >&2
  rm -rf "$ENV_DIR/uv-cache"
  got=$("$VENV/bin/guidellm" --version 2>/dev/null | grep -o '[0-9][0-9.]*' | tail -1)
  if [[ $got != "$GUIDELLM_VERSION" ]]; then
    log "guidellm --version reports '$got', expected $GUIDELLM_VERSION"
    exit 1
  fi
  touch "$ENV_DIR/.complete"
  log "installed in $((SECONDS - t0)) s; $(du -sh "$ENV_DIR" | cut -f1) on disk"
fi

echo "GUIDELLM=$VENV/bin/guidellm"
