#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (fuzz/) with clang, ASan and UBSan in their own
# build directory and runs each for SECONDS_EACH seconds, starting from its seed corpus
# fuzz/corpus/NAME/ (read only: inputs found to add coverage go to BUILD/fuzz-corpus/NAME/,
# kept between runs). A crash, sanitizer report, leak, timeout (10 s per input) or RSS
# over 2 GiB fails the run; the input that did it is saved as BUILD/fuzz-artifacts/NAME/
# crash-* (or leak-*, timeout-*, oom-*) and the log tail printed. Ends with one line per
# target: runs, coverage and corpus size.
# Usage: scripts/fuzz.sh [BUILD_DIR] [SECONDS_EACH] [TARGET_NAME...]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-60}
shift $(($# < 2 ? $# : 2))
JOBS=${JOBS:-$(nproc)}

if [[ ! -f "$BUILD/build.ninja" ]]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKINFERENCE_FUZZ=ON
fi
cmake --build "$BUILD" -j "$JOBS" --target fuzz_all

names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then
  for f in "$BUILD"/fuzz/*_fuzz; do names+=("$(basename "${f%_fuzz}")"); done
fi
mkdir -p "$BUILD/fuzz-logs"
failed=()
summary=()
for name in "${names[@]}"; do
  corpus="$BUILD/fuzz-corpus/$name"
  artifacts="$BUILD/fuzz-artifacts/$name"
  log="$BUILD/fuzz-logs/$name.log"
  mkdir -p "$corpus" "$artifacts"
  echo "== fuzz $name for ${SECONDS_EACH}s"
  if "$BUILD/fuzz/${name}_fuzz" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" \
      "$corpus" "fuzz/corpus/$name" >"$log" 2>&1; then
    runs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
    summary+=("fuzz: $name ok: ${runs:-?} runs in ${SECONDS_EACH}s, cov ${cov:-?}, corpus $(ls "$corpus" | wc -l) + seeds $(ls "fuzz/corpus/$name" | wc -l)")
  else
    tail -60 "$log"
    summary+=("fuzz: $name FAILED (log $log, input in $artifacts/)")
    failed+=("$name")
  fi
done
printf '%s\n' "${summary[@]}"
[[ ${#failed[@]} -eq 0 ]]
