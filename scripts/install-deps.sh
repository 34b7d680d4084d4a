#!/usr/bin/env bash
# Installs Kinference's build and test dependencies from Debian 12 packages.
# Boost is pinned to the 1.81 packages (Debian 12's default libboost-dev is 1.74).
# msgpack (vLLM's KV events): libmsgpuck-dev (Tarantool's MsgPuck: one header and a small static
# library, no dependencies). libmsgpack-cxx-dev is left out: in Debian 12 it depends on
# libboost-dev (1.74), which conflicts with the 1.81 headers, and libmsgpack-dev depends on it.
# Runs non-interactively as root (CI) or through sudo.
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build pkg-config
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev
  libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev libxxhash-dev
  libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libzmq3-dev cppzmq-dev libmsgpuck-dev libpcre2-dev libicu-dev libsqlite3-dev
  libpq-dev libhiredis-dev postgresql redis-server
  python3 python3-venv curl clang-format ccache
  openssl python3-yaml  # scripts/k8s-testenv.sh (keys, tokens); tests/deploy (rendered YAML)
  prometheus  # tests/deploy/dashboard_test.py: dashboard queries, promtool rule tests
  clang libclang-rt-14-dev  # make fuzz: clang 14 with libFuzzer, ASan and UBSan runtimes
)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then exit 0; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
