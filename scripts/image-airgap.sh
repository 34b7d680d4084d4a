#!/usr/bin/env bash
# Builds the Kinference image the way a machine without a container registry can, and
# starts it against an engine-sim (tests/deploy/image_test.sh):
#  1. a Debian 12 root file system from Debian's packages (mmdebstrap, minbase) holding the
#     runtime packages the Dockerfile's runtime stage installs (its KINFERENCE_RUNTIME_PACKAGES,
#     read from the Dockerfile, so the two cannot differ) and user/group 65532, imported into
#     podman as localhost/kinference-runtime-base:bookworm (cached: rebuilt when the package
#     list changes);
#  2. `podman build` of deploy/image/Containerfile.prebuilt with the stripped binary.
# Needs podman, buildah's storage and mmdebstrap from Debian 12 (apt-get install podman
# mmdebstrap uidmap runc) and root. Debian's mirror is the only network it uses.
# Usage: scripts/image-airgap.sh KINFERENCE_BINARY [TAG]   (default TAG localhost/kinference:dev)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:?usage: image-airgap.sh KINFERENCE_BINARY [TAG]}
TAG=${2:-localhost/kinference:dev}
for t in podman mmdebstrap; do
  command -v "$t" >/dev/null || { echo "image-airgap: $t missing (apt-get install podman mmdebstrap uidmap runc)" >&2; exit 1; }
done
PKGS=$(python3 - "$ROOT/Dockerfile" <<'PY'
import re, sys
m = re.search(r'ARG KINFERENCE_RUNTIME_PACKAGES="\\\n(.*?)"', open(sys.argv[1]).read(), re.S)
print(",".join(m.group(1).replace("\\", "").split()))
PY
)
BASE=localhost/kinference-runtime-base:bookworm
KEY=$(echo "$PKGS" | sha256sum | cut -c1-16)
if [[ $(podman image inspect --format '{{index .Labels "kinference.packages"}}' "$BASE" 2>/dev/null) != "$KEY" ]]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  echo "image-airgap: mmdebstrap bookworm minbase + $PKGS"
  mmdebstrap --variant=minbase --include="$PKGS" \
    --customize-hook='chroot "$1" groupadd --system --gid 65532 kinference' \
    --customize-hook='chroot "$1" useradd --system --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kinference' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$WORK/rootfs.tar" "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian-security bookworm-security main"
  podman import --change "LABEL kinference.packages=$KEY" "$WORK/rootfs.tar" "$BASE" >/dev/null
fi
CTX=$(mktemp -d)
trap 'rm -rf "$CTX" ${WORK:-}' EXIT
strip --strip-debug -o "$CTX/kinference" "$BIN"
COMMIT=$("$BIN" --version | sed -n 's/.*commit \([0-9a-f]*\).*/\1/p')
podman build -q -f "$ROOT/deploy/image/Containerfile.prebuilt" --build-arg BASE="$BASE" \
  --build-arg GIT_COMMIT="$COMMIT" -t "$TAG" "$CTX" >/dev/null
echo "image-airgap: built $TAG ($(podman image inspect --format '{{.Size}}' "$TAG") bytes)"
