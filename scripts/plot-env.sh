#!/usr/bin/env bash
# Plotting environment for the reports (scripts/plot_sim.py, scripts/plot_bench.py):
# matplotlib (pinned, from PyPI) in a virtual environment cached outside the clone and reused.
#
# Usage: scripts/plot-env.sh
#   Prints one line: the venv's python (progress goes to stderr). Exits non-zero, saying
#   why, when the venv cannot be made (no python3-venv, PyPI unreachable). Safe to run
#   concurrently: a lock serialises the first install.
# Where: ${KINFERENCE_CACHE:-~/.cache/kinference}/plot-matplotlib-<version>/venv, complete
# once its .complete stamp exists (an interrupted install is redone).
set -euo pipefail

MATPLOTLIB_VERSION=3.11.2
CACHE="${KINFERENCE_CACHE:-$HOME/.cache/kinference}"
ENV_DIR="$CACHE/plot-matplotlib-$MATPLOTLIB_VERSION"
VENV="$ENV_DIR/venv"

log() { echo "plot-env: $*" >&2; }

mkdir -p "$CACHE"
exec 9>"$CACHE/.plot-env.lock"
flock 9

if [[ ! -f $ENV_DIR/.complete ]]; then
  command -v python3 >/dev/null || { log "python3 is required (scripts/install-deps.sh)"; exit 1; }
  log "installing matplotlib==$MATPLOTLIB_VERSION into $VENV (one time; ~40 MB)"
  t0=$SECONDS
  rm -rf "$ENV_DIR"
  mkdir -p "$ENV_DIR"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
    "matplotlib==$MATPLOTLIB_VERSION" >&2
  "$VENV/bin/python" -c 'import matplotlib' >&2
  touch "$ENV_DIR/.complete"
  log "installed in $((SECONDS - t0)) s"
fi
echo "$VENV/bin/python"
