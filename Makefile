# Ember's entry points. Each target installs missing Debian packages first (no apt when all are there),
# configures a Release build with ccache into build/ and builds what it needs.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
TSAN_BUILD ?= build-tsan
PACKAGES := cmake g++ make ccache pkg-config libeigen3-dev libdnnl-dev ocl-icd-opencl-dev catch2 libopenblas-dev \
            libspdlog-dev nlohmann-json3-dev zlib1g-dev libhdf5-dev libzip-dev libcli11-dev libpng-dev libjpeg62-turbo-dev \
            libonnx-dev libprotobuf-dev libopenmpi-dev openmpi-bin \
            dataset-fashion-mnist
CMAKE_FLAGS ?=
export CCACHE_DIR ?= $(HOME)/.cache/ember-ccache
# Lets ccache cache the tests, which include a precompiled header.
export CCACHE_SLOPPINESS ?= pch_defines,time_macros,include_file_mtime,include_file_ctime

.PHONY: deps configure build train test bench test-sanitize test-tsan clean

deps:
	@missing=$$(for p in $(PACKAGES); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing missing packages:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends $$missing; \
	fi

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
	  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache $(CMAKE_FLAGS)

configure: deps $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

train: configure
	cmake --build $(BUILD) -j $(JOBS) --target train_fashion_mnist
	$(BUILD)/apps/train_fashion_mnist $(TRAIN_FLAGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# bench_train's reference is PyTorch (bench/compare_pytorch.py runs both): Debian's python3-torch, installed
# here when missing, run by Debian's own python3 (the one that sees it).
bench: configure
	@dpkg-query -W -f='$${Status}' python3-torch 2>/dev/null | grep -q "ok installed" || { \
	  echo "Installing missing package: python3-torch"; SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends python3-torch; }
	cmake --build $(BUILD) -j $(JOBS) --target bench_matmul bench_dispatch bench_elementwise bench_autodiff bench_data bench_conv \
	  bench_checkpoint bench_train bench_mixed bench_function bench_layers
	$(BUILD)/bench/bench_matmul
	$(BUILD)/bench/bench_dispatch
	$(BUILD)/bench/bench_elementwise
	$(BUILD)/bench/bench_autodiff
	$(BUILD)/bench/bench_data
	$(BUILD)/bench/bench_conv
	$(BUILD)/bench/bench_checkpoint
	$(BUILD)/bench/bench_mixed
	$(BUILD)/bench/bench_function
	/usr/bin/python3 bench/compare_pytorch.py --rounds 3 --bench-train $(BUILD)/bench/bench_train
	/usr/bin/python3 bench/compare_pytorch_layers.py --bench-layers $(BUILD)/bench/bench_layers

# AddressSanitizer + UndefinedBehaviorSanitizer, CPU only; the unit tests (not the consumer builds). Not the cases that
# start Open MPI (named after MultiWorkerMirroredStrategy): its leaks live in components it unloads at exit, which
# LeakSanitizer can neither name nor suppress.
test-sanitize: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DEMBER_SANITIZE=ON -DEMBER_CUDA=OFF \
	  -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_APPS=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/support/lsan.supp ctest --output-on-failure -j $(JOBS) -L unit \
	  -E MultiWorkerMirroredStrategy

# ThreadSanitizer on the data pipeline (the one place Ember runs threads of its own). Only the data test
# executables are built, to save CI time. Their test cases are named "data: ..."; the one reading the full
# Fashion-MNIST files ("... real files") is left to `make test` and `make test-sanitize`: under TSan it is
# slow and has no threads to check. OpenMP's libgomp is not TSan-instrumented: tests/support/tsan.supp.
DATA_TESTS := test_data_pipeline test_data_shuffle test_data_parallel test_data_loaders test_image_dataset test_datasets
test-tsan: deps
	cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1 -fsanitize=thread" \
	  -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread -DEMBER_CUDA=OFF \
	  -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_APPS=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
	cmake --build $(TSAN_BUILD) -j $(JOBS) --target $(DATA_TESTS)
	cd $(TSAN_BUILD) && TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/support/tsan.supp" \
	  ctest --output-on-failure -j $(JOBS) -R '^data: ' -E 'real files'

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
