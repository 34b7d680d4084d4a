#!/usr/bin/env bash
# Builds the Kubernetes tools that the tests and `make demo-k8s` run, at pinned versions, from
# the Go module proxy, and prints the folder that holds them (the last line on stdout):
#   etcd            3.6.16  (tools/k8s/etcd: wrapper module around etcdmain)
#   kube-apiserver  1.34.4  (tools/k8s/kubernetes: wrapper module, staging modules at v0.34.4)
#   kubectl         1.34.4
#   helm            3.22.0  (tools/k8s/helm)
# The wrapper modules' go.mod/go.sum are committed and built with -mod=readonly, so every
# machine builds the same code (module hashes checked against go.sum). Why wrappers, and the
# flags: docs/kubernetes.md (measured), Kubernetes' hack/lib/version.sh and
# helm's Makefile (version ldflags).
#
# Binaries go to $KINFERENCE_CACHE/k8s-tools-<versions>/bin (default ~/.cache/kinference),
# outside the clone and keyed by version, so only a new machine (or a version bump) pays the
# build; a tool already there is not rebuilt. Go's module and build caches go under
# $KINFERENCE_CACHE/go. Concurrent runs wait for each other (flock). Progress goes to stderr.
#
# Go: `go` >= 1.26 on PATH or in /usr/local/go/bin; without one, the Go 1.26.8 toolchain is
# fetched from the Go module proxy (module golang.org/toolchain, SHA-256 pinned below) into
# the cache. Cold build of all four: 15-30 min on a loaded 2-core machine; do not run it in
# parallel with the C++ build.
#
# Usage: scripts/k8s-tools.sh [--print-dir]   (--print-dir: print the folder, build nothing)
set -euo pipefail

ETCD_VERSION=3.6.16
K8S_VERSION=1.34.4
HELM_VERSION=3.22.0
GO_BOOTSTRAP=1.26.8
GO_BOOTSTRAP_SHA256_LINUX_AMD64=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KINFERENCE_CACHE:-$HOME/.cache/kinference}
BIN="$CACHE/k8s-tools-etcd$ETCD_VERSION-k8s$K8S_VERSION-helm$HELM_VERSION/bin"

if [[ ${1:-} == --print-dir ]]; then
  echo "$BIN"
  exit 0
fi

log() { echo "k8s-tools: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

# Checks that a wrapper module pins the version this script names (one source of truth for
# the cache key would be nicer, but go.mod must stay a plain file that `go mod tidy` owns).
check_pin() { # module_dir module version
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?$2 v$3( // indirect)?\$" "$ROOT/tools/k8s/$1/go.mod" ||
    die "tools/k8s/$1/go.mod does not require $2 v$3; update both together"
}
check_pin etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
check_pin kubernetes k8s.io/kubernetes "$K8S_VERSION"
check_pin helm helm.sh/helm/v3 "$HELM_VERSION"

all_present() {
  local t
  for t in etcd kube-apiserver kubectl helm; do [[ -x $BIN/$t ]] || return 1; done
}
if all_present; then
  echo "$BIN"
  exit 0
fi

mkdir -p "$BIN" "$CACHE/go"
exec 9>"$CACHE/k8s-tools.lock"
log "waiting for the build lock $CACHE/k8s-tools.lock" && flock 9 && log "lock taken"

go_ok() { # go binary -> true if >= 1.26
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  [[ $v =~ ^1\.([0-9]+) ]] && ((BASH_REMATCH[1] >= 26))
}

find_go() {
  local g
  for g in "$(command -v go || true)" /usr/local/go/bin/go "$CACHE/go-toolchain-$GO_BOOTSTRAP/bin/go"; do
    if [[ -n $g && -x $g ]] && go_ok "$g"; then
      echo "$g"
      return 0
    fi
  done
  return 1
}

bootstrap_go() {
  [[ $(uname -s)/$(uname -m) == Linux/x86_64 ]] ||
    die "no Go >= 1.26 found; install one (https://go.dev/dl/) and put it on PATH"
  local dir="$CACHE/go-toolchain-$GO_BOOTSTRAP" tmp
  tmp=$(mktemp -d "$CACHE/go-toolchain.XXXXXX")
  log "no Go >= 1.26 found; fetching go$GO_BOOTSTRAP from the Go module proxy"
  curl -fsSL --retry 3 -o "$tmp/toolchain.zip" \
    "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go$GO_BOOTSTRAP.linux-amd64.zip"
  echo "$GO_BOOTSTRAP_SHA256_LINUX_AMD64  $tmp/toolchain.zip" | sha256sum -c --quiet - ||
    die "go$GO_BOOTSTRAP toolchain zip has an unexpected SHA-256"
  python3 -m zipfile -e "$tmp/toolchain.zip" "$tmp/x"
  local top="$tmp/x/golang.org/toolchain@v0.0.1-go$GO_BOOTSTRAP.linux-amd64"
  chmod -R u+w "$top" && chmod +x "$top"/bin/* "$top"/pkg/tool/*/*
  rm -rf "$dir" && mv "$top" "$dir" && rm -rf "$tmp"
}

GO=$(find_go) || {
  bootstrap_go
  GO=$(find_go) || die "the fetched Go toolchain does not run"
}
log "using $GO ($("$GO" env GOVERSION))"

export GOTOOLCHAIN=local GOFLAGS=-mod=readonly CGO_ENABLED=0
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOPATH="$CACHE/go/path"
unset GOWORK GOOS GOARCH

# build NAME MODULE_DIR LDFLAGS PACKAGE: builds one binary into $BIN (atomically: a temp name,
# then rename, so an interrupted build never leaves a half-written tool behind).
build() {
  local name=$1 dir=$2 ldflags=$3 pkg=$4 start
  if [[ -x $BIN/$name ]]; then
    log "$name: present"
    return 0
  fi
  log "$name: building $pkg"
  start=$(date +%s)
  (cd "$ROOT/tools/k8s/$dir" && "$GO" build -trimpath -ldflags "-s -w $ldflags" -o "$BIN/.$name.tmp" "$pkg")
  mv -f "$BIN/.$name.tmp" "$BIN/$name"
  log "$name: built in $(($(date +%s) - start)) s"
}

build etcd etcd "" .

k8s_ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=${K8S_VERSION%%.*}"
  minor=${K8S_VERSION#*.}
  k8s_ldflags+=" -X $p.gitMinor=${minor%%.*} -X $p.gitTreeState=clean"
done
build kube-apiserver kubernetes "$k8s_ldflags" k8s.io/kubernetes/cmd/kube-apiserver
build kubectl kubernetes "$k8s_ldflags" k8s.io/kubernetes/cmd/kubectl

# helm's Makefile: Kubernetes version = its client-go's (v0.X.Y -> 1.X), else it assumes 1.20
# and refuses charts with kubeVersion >= 1.28.
client_go=$(cd "$ROOT/tools/k8s/helm" && "$GO" list -m -f '{{.Version}}' k8s.io/client-go)
helm_minor=$(echo "$client_go" | cut -d. -f2)
helm_ldflags="-X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION"
helm_ldflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  helm_ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$helm_minor"
done
build helm helm "$helm_ldflags" helm.sh/helm/v3/cmd/helm

all_present || die "some tools are missing from $BIN"
echo "$BIN"
