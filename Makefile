# Kinference: `make demo` runs the main job, `make test` runs every test.
# Both install what they need (scripts/install-deps.sh) and build first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build test unit-test demo bench bench-sim format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD)/build.ninja: CMakeLists.txt | deps
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: deps $(BUILD)/build.ninja
	cmake --build $(BUILD) -j $(JOBS)

# Every test: unit and integration tests under CTest (real processes on loopback).
test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 300

demo: build
	bash scripts/demo.sh

# Microbenchmarks (Google Benchmark).
bench: build
	@for b in $(BUILD)/benchmarks/*_bench; do echo "== $$b"; $$b --benchmark_min_time=0.2; done

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD)
