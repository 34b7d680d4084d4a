#!/usr/bin/env bash
# `make test-asan`: the whole CTest suite (unit and loopback integration tests, the
# kinference processes they start included) built with AddressSanitizer and
# UndefinedBehaviorSanitizer (gcc, KINFERENCE_SANITIZE=ON) in its own build directory.
# Any sanitizer report makes the process that hit it fail, and with it its test. Reports
# go to files in BUILD/sanitizer-reports/ (one per process that hit one), so a report in a
# child process whose exit status its test does not check (a gateway stopped with SIGTERM
# at the end of a test that passed, say) fails the run too: each is printed at the end.
# Left out (ASAN_CTEST_EXCLUDE, a CTest -E regex; empty runs everything): the real-vLLM
# suite (Python vLLM, not our code, and 10+ min of start-up), the Kubernetes suites against
# a real API server (K8sClientTest, ControllerEnvTest, K8sTestEnv*, deploy.helm_chart: etcd and
# kube-apiserver start-up dominates, and the controller's logic runs under ASan in
# tests/controller and tests/crd with the in-process fake API server), the Grafana/
# Prometheus check (a real Prometheus scraping for minutes) and the Dockerfile check
# (it compares `ldd kinference` with the runtime image's packages, and an ASan binary
# links libasan, which the image rightly lacks).
# Usage: scripts/test_asan.sh [BUILD_DIR] [JOBS]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-asan}
JOBS=${2:-$(nproc)}
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKINFERENCE_SANITIZE=ON
fi
cmake --build "$BUILD" -j "$JOBS"
REPORTS="$PWD/$BUILD/sanitizer-reports"
rm -rf "$REPORTS"
mkdir -p "$REPORTS"
ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1}
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$REPORTS/asan:log_exe_name=1"
export UBSAN_OPTIONS="$UBSAN_OPTIONS:log_path=$REPORTS/ubsan:log_exe_name=1"
cd "$BUILD"
EXCLUDE=${ASAN_CTEST_EXCLUDE-realvllm_suite|^K8sClientTest\.|^ControllerEnvTest\.|^K8sTestEnv|^deploy\.}
rc=0
ctest --output-on-failure -j "$JOBS" --timeout 900 ${EXCLUDE:+-E "$EXCLUDE"} || rc=$?
reports=("$REPORTS"/*)
if [[ -e ${reports[0]} ]]; then
  for f in "${reports[@]}"; do
    echo "== sanitizer report $f"
    cat "$f"
  done
  echo "test_asan: ${#reports[@]} sanitizer report(s), listed above:"
  grep -h "^SUMMARY:" "${reports[@]}" | sort | uniq -c || true
  exit 1
fi
exit "$rc"
