#!/usr/bin/env bash
# The Dockerfile's runtime stage installs every shared library the built binary loads: each
# library `ldd` lists is mapped to its Debian package with `dpkg -S`. A library the binary
# names itself (DT_NEEDED) must come from a package in KINFERENCE_RUNTIME_PACKAGES; one that
# only those libraries need may also come from a package apt installs with them (their
# Depends/Pre-Depends, recursively, read from this machine's dpkg database). No docker needed.
# Usage: tests/deploy/dockerfile_runtime_test.sh BINARY DOCKERFILE
set -euo pipefail
BINARY=$1
DOCKERFILE=$2
[[ -x $BINARY ]] || {
  echo "FAIL: $BINARY is not an executable"
  exit 1
}

# The ARG's value: the lines from `ARG KINFERENCE_RUNTIME_PACKAGES="` to the closing quote.
listed=$(sed -n '/^ARG KINFERENCE_RUNTIME_PACKAGES="/,/"$/p' "$DOCKERFILE" |
  sed -e 's/^ARG KINFERENCE_RUNTIME_PACKAGES="//' -e 's/[\\"]//g' | tr -s ' \n' '\n' | sed '/^$/d' | sort -u)
[[ -n $listed ]] || {
  echo "FAIL: no ARG KINFERENCE_RUNTIME_PACKAGES in $DOCKERFILE"
  exit 1
}
grep -q 'apt-get install .*\$KINFERENCE_RUNTIME_PACKAGES' "$DOCKERFILE" || {
  echo "FAIL: the runtime stage does not apt-get install \$KINFERENCE_RUNTIME_PACKAGES"
  exit 1
}

# dpkg -S knows a library by the path its package installed; with merged /usr that may be
# /lib/... or /usr/lib/..., so try the path, its resolved form, and the other prefix.
package_of() {
  local p=$1 real c out
  real=$(readlink -f "$p")
  for c in "$p" "$real" "${p/#\/lib\//\/usr\/lib\/}" "${p/#\/usr\/lib\//\/lib\/}" \
    "${real/#\/lib\//\/usr\/lib\/}" "${real/#\/usr\/lib\//\/lib\/}"; do
    if out=$(dpkg -S "$c" 2>/dev/null); then
      echo "${out%%: *}" | cut -d, -f1 | sed 's/:.*//'
      return 0
    fi
  done
  return 1
}

# The listed packages and everything they depend on, recursively (installed packages only:
# those are the ones whose libraries ldd found).
closure=$(python3 - $listed <<'PY'
import re, subprocess, sys
seen, todo = set(), list(sys.argv[1:])
while todo:
    p = todo.pop()
    if p in seen:
        continue
    seen.add(p)
    r = subprocess.run(["dpkg-query", "-W", "-f=${Depends}, ${Pre-Depends}", p], capture_output=True, text=True)
    for alt in r.stdout.split(","):
        for name in alt.split("|"):
            name = re.sub(r"\(.*?\)|:any|:amd64", "", name).strip()
            if name:
                todo.append(name)
print("\n".join(sorted(seen)))
PY
)

needed=$(readelf -d "$BINARY" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
libs=$(ldd "$BINARY" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3} $1 ~ /^\// {print $1, $1}' | sort -u)
[[ -n $libs ]] || {
  echo "FAIL: ldd found no libraries in $BINARY"
  exit 1
}
missing=0
direct_pkgs=""
while read -r soname lib; do
  if ! pkg=$(package_of "$lib"); then
    echo "FAIL - no Debian package owns $lib"
    missing=1
    continue
  fi
  if grep -qxF "$soname" <<<"$needed"; then
    direct_pkgs+="$pkg"$'\n'
    if grep -qx "$pkg" <<<"$listed"; then
      echo "ok - $soname (linked) from $pkg, listed"
    else
      echo "FAIL - $soname is linked and comes from $pkg, which KINFERENCE_RUNTIME_PACKAGES does not list"
      missing=1
    fi
  elif grep -qx "$pkg" <<<"$closure"; then
    echo "ok - $soname (needed by a library) from $pkg, installed with the listed packages"
  else
    echo "FAIL - $lib comes from $pkg, which neither the listed packages nor their dependencies install"
    missing=1
  fi
done <<<"$libs"
for p in $listed; do
  grep -qx "$p" <<<"$direct_pkgs" || echo "note - $p is listed but the binary links no library of it"
done
exit $missing
