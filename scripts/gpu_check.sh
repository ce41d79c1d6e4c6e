#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, in one command that stays under 8 minutes on an H200 (16 cores): builds
# Ember with CUDA (Release; only the library, the test executables that have [cuda] cases, bench_gpu and
# train_fashion_mnist), runs their [cuda] cases and the CUDA-build checks tagged [cuda_build], then bench_gpu,
# then the app's MLP and CNN for 5 epochs on the GPU, and prints a summary: test cases passed / failed /
# skipped, the failures, the bench table and each training run's last line.
# A failing test does not stop the rest; the exit status is non-zero when a test, the build, the bench or a
# training run failed.
# Usage: scripts/gpu_check.sh [build-dir]   (default: build-gpu; logs in <build-dir>/gpu_check/ or $GPU_CHECK_LOGS)
#        scripts/gpu_check.sh --bundle FILE [dir]   runs, instead of building, what scripts/gpu_bundle.sh built and
#          packed on another machine (for a GPU machine without Ember's Debian packages), unpacked into dir
#          (default: build-gpu-bundle); the bundle's cuDNN and cuBLASLt are the machine's own, found where they are.
#        scripts/gpu_check.sh --list-tests   prints the test executables it runs
set -euo pipefail
cd "$(dirname "$0")/.."
# Every tests/**/test_*.cpp is an executable of that name; those with [cuda] or [cuda_build] cases are run.
tests=$(grep -rlE --include='test_*.cpp' '"[^"]*\[cuda(_build)?\]' tests | xargs -n1 basename | sed 's/\.cpp$//' | sort -u)
if [ "${1:-}" = --list-tests ]; then
  echo $tests
  exit 0
fi
BUNDLE=
if [ "${1:-}" = --bundle ]; then
  BUNDLE=${2:?"--bundle needs a file"}
  BUILD=${3:-build-gpu-bundle}
else
  BUILD=${1:-build-gpu}
fi
LOGS=${GPU_CHECK_LOGS:-$BUILD/gpu_check}
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start))s"; }

echo "== GPU ($(elapsed))"
# The device's own architecture only (nvcc time); the CI build covers sm_80 and sm_90.
has_gpu=1
if nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader; then
  archs=native
else
  has_gpu=0
  echo "gpu_check: nvidia-smi sees no GPU: the [cuda] cases will skip"
  archs="80;90"
fi

unpack_bundle() {
  echo "== unpack $BUNDLE ($(elapsed))"
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  tar -xJf "$BUNDLE" -C "$BUILD"
  echo "bundle of commit $(cat "$BUILD/commit")"
  local dirs="$BUILD/lib" lib path
  for lib in $(cat "$BUILD/machine-libs"); do
    ldconfig -p | grep -qF " $lib " && continue  # on the loader's own path
    path=$(find /usr/local /opt /usr/lib -name "$lib" -print -quit 2> /dev/null || true)
    if [ -z "$path" ]; then
      echo "gpu_check: $lib is not on this machine"
    elif [[ ":$dirs:" != *":$(dirname "$path"):"* ]]; then
      dirs+=":$(dirname "$path")"
    fi
  done
  export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$BUILD/lib/libember.so.0" "$BUILD"/tests/* "$BUILD"/bench/* "$BUILD"/apps/* | grep "not found" || true
  export EMBER_DATA_DIR="$BUILD/data"
}

mkdir -p "$LOGS"
if [ -n "$BUNDLE" ]; then
  unpack_bundle
else
  launcher=()
  if command -v ccache > /dev/null; then
    export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi

  echo "== configure ($(elapsed))"
  if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_APPS=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$archs" ${launcher[@]+"${launcher[@]}"} > "$LOGS/configure.log" 2>&1; then
    tail -30 "$LOGS/configure.log"
    echo "gpu_check: configure failed (log: $LOGS/configure.log)"
    exit 1
  fi

  echo "== build: ember, bench_gpu, train_fashion_mnist and $(echo "$tests" | wc -w) test executables ($(elapsed))"
  # shellcheck disable=SC2086
  if ! cmake --build "$BUILD" -j "$(nproc)" --target ember bench_gpu train_fashion_mnist $tests > "$LOGS/build.log" 2>&1; then
    grep -E -B2 -A6 "error|Error" "$LOGS/build.log" | head -80
    echo "gpu_check: build failed (log: $LOGS/build.log)"
    exit 1
  fi
fi

echo "== tests ($(elapsed))"
cases_passed=0 cases_failed=0 cases_skipped=0
failed_exes=()
for name in $tests; do
  log="$LOGS/$name.log"
  rc=0
  timeout 240 "$BUILD/tests/$name" "[cuda],[cuda_build]" > "$log" 2>&1 || rc=$?
  # Catch2's last lines: "All tests passed (A assertions in C test cases)" or "test cases: C | P passed | F failed".
  passed=0 failed=0
  if line=$(grep -E "^All tests passed" "$log" | tail -1); then
    passed=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<< "$line")
  elif line=$(grep -E "^test cases:" "$log" | tail -1); then
    passed=$(grep -oE "[0-9]+ passed" <<< "$line" | grep -oE "[0-9]+" || echo 0)
    failed=$(grep -oE "[0-9]+ failed" <<< "$line" | grep -oE "[0-9]+" || echo 0)
  fi
  skipped=$(grep -c "no CUDA device" "$log" || true)  # a skipped case passes: count it as skipped only
  passed=$((passed > skipped ? passed - skipped : 0))
  if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # crashed, timed out (124) or aborted
  cases_passed=$((cases_passed + passed)) cases_failed=$((cases_failed + failed))
  cases_skipped=$((cases_skipped + skipped))
  status=ok
  if [ "$rc" -ne 0 ]; then
    status="FAILED (exit $rc)"
    failed_exes+=("$name")
  fi
  printf "%-28s %3s passed %3s failed %3s skipped  %s\n" "$name" "$passed" "$failed" "$skipped" "$status"
done

echo "== bench_gpu ($(elapsed))"
bench_rc=0
timeout 240 "$BUILD/bench/bench_gpu" > "$LOGS/bench_gpu.txt" 2>&1 || bench_rc=$?
cat "$LOGS/bench_gpu.txt"

# The app's models trained on the GPU for the default 5 epochs; their last lines (test accuracy, seconds per
# epoch) go in the summary. Needs Fashion-MNIST (Debian's dataset-fashion-mnist, or the bundle's copy).
echo "== training on the GPU ($(elapsed))"
train_rc=0 train_lines=()
runs=("mlp float32" "cnn float32" "cnn mixed_float16")
[ "$has_gpu" -eq 1 ] || { echo "no GPU: skipped"; runs=(); }
for run in ${runs[@]+"${runs[@]}"}; do
  read -r model precision <<< "$run"
  log="$LOGS/train_${model}_$precision.log"
  rc=0
  timeout 150 "$BUILD/apps/train_fashion_mnist" --device gpu --model "$model" --precision "$precision" --verbose 2 \
    > "$log" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || train_rc=$rc
  train_lines+=("$(printf "%-4s %-16s %s" "$model" "$precision" "$(tail -1 "$log")")$([ "$rc" -eq 0 ] || echo " (exit $rc)")")
  echo "${train_lines[-1]}"
done

echo "== summary ($(elapsed))"
for name in ${failed_exes[@]+"${failed_exes[@]}"}; do
  echo "--- $name (full log: $LOGS/$name.log)"
  grep -E -A12 "FAILED|FATAL|failed with|Terminate|terminate called" "$LOGS/$name.log" | head -60 || tail -20 "$LOGS/$name.log"
done
echo "test cases: $cases_passed passed, $cases_failed failed, $cases_skipped skipped for want of a GPU"
echo "executables with failures: ${#failed_exes[@]}${failed_exes[*]:+ (${failed_exes[*]})}"
if [ "$bench_rc" -ne 0 ]; then echo "bench_gpu failed (exit $bench_rc)"; else echo "bench_gpu: ok (table above)"; fi
[ "${#train_lines[@]}" -eq 0 ] || printf "train_fashion_mnist: %s\n" "${train_lines[@]}"
if [ "${#failed_exes[@]}" -ne 0 ] || [ "$bench_rc" -ne 0 ] || [ "$train_rc" -ne 0 ]; then exit 1; fi
