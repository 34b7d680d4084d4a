# Kinference: `make demo` runs the main job, `make test` runs every test.
# Both install what they need (scripts/install-deps.sh) and build first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
# ccache rewrites absolute paths under the clone's root to relative ones before hashing,
# so a clone at any path (CI's fresh clone) reuses objects built in another; exported to
# every build this Makefile starts (cmake, scripts/fuzz.sh, scripts/test_asan.sh).
export CCACHE_BASEDIR := $(CURDIR)

.PHONY: all deps build test test-sdk unit-test demo bench bench-sim bench-gateway bench-peers format clean k8s-tools fuzz test-asan test-image
.PHONY: demo-vllm bench-guidellm

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Every test: unit and integration tests under CTest (real processes on loopback), then
# the SDK conformance tests; ends with "tests: N passed, M failed".
test: build
	bash scripts/run_tests.sh $(BUILD) $(JOBS)

# The official openai and anthropic Python SDKs against a live gateway (tests/sdk/;
# creates $(BUILD)/sdk-venv with pip on first use; skips only without python3-venv).
test-sdk: build
	bash tests/sdk/run.sh $(BUILD)/kinference

demo: build
	bash scripts/demo.sh

# The same job against real vLLM replicas (CPU build, tiny local model, installed and cached
# by scripts/vllm-env.sh): results/demo-vllm/summary.json.
demo-vllm: build
	DEMO_BACKEND=vllm bash scripts/demo.sh

# GuideLLM (PyPI, own cached venv) and `kinference bench` drive the same shared-prefix load
# (Poisson and concurrent) through the gateway to real vLLM: results/guidellm/, docs/real-vllm.md.
bench-guidellm: build
	BUILD=$(BUILD) bash scripts/bench-guidellm.sh

# Kinference on a local Kubernetes API server: controller, gateway --kubernetes, engine-sim
# pods in two InferencePools, readiness and a policy edit and rollback moving traffic.
.PHONY: demo-k8s
demo-k8s: build
	bash scripts/demo_k8s.sh

# Microbenchmarks (Google Benchmark).
bench: build
	@for b in $(BUILD)/benchmarks/*_bench; do echo "== $$b"; $$b --benchmark_min_time=0.2; done

# Every simulator scenario for every strategy: results/sim/*.json and results/sim/REPORT.md.
bench-sim: build
	BUILD=$(BUILD) JOBS=$(JOBS) bash scripts/bench_sim.sh

# What each front adds over a direct connection to one engine: Kinference, nginx,
# sglang-router and vllm-router (installed by scripts/peers-env.sh, cached in ~/.cache):
# results/gateway/REPORT.md.
bench-gateway: build
	BUILD=$(BUILD) bash scripts/bench_gateway.sh

# The demo's workloads through Kinference and through the peer routers (three fresh
# engine-sims per run): results/peers/REPORT.md.
bench-peers: build
	BUILD=$(BUILD) bash scripts/bench_peers.sh

# etcd, kube-apiserver, kubectl and helm at pinned versions, built from the Go module proxy
# into ~/.cache/kinference (once per machine). Prints their folder.
k8s-tools:
	@bash scripts/k8s-tools.sh

# The container image built without a registry (mmdebstrap + podman from Debian 12,
# scripts/image-airgap.sh) and started against an engine-sim (tests/deploy/image_test.sh).
# Installs podman, mmdebstrap, uidmap, runc, fuse-overlayfs and slirp4netns first (the set
# the test was run with; podman's Recommends are not installed).
test-image: build
	@command -v podman >/dev/null && command -v mmdebstrap >/dev/null && command -v runc >/dev/null || \
	  { SUDO=$$( [ "$$(id -u)" -ne 0 ] && echo sudo ); $$SUDO apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends \
	    podman mmdebstrap uidmap runc fuse-overlayfs slirp4netns </dev/null; }
	bash tests/deploy/image_test.sh $(BUILD)/kinference

# libFuzzer targets (fuzz/) built with clang, ASan and UBSan in build-fuzz, each run for
# FUZZ_SECONDS from its seed corpus (fuzz/corpus/NAME); any finding fails (scripts/fuzz.sh).
FUZZ_SECONDS ?= 60
fuzz: deps
	JOBS=$(JOBS) bash scripts/fuzz.sh build-fuzz $(FUZZ_SECONDS)

# The CTest suite built with ASan and UBSan in build-asan, less the suites against real
# vLLM, a real Kubernetes API server and Prometheus (scripts/test_asan.sh says why).
test-asan: deps
	bash scripts/test_asan.sh build-asan $(JOBS)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD)
