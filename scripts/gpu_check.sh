#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, in one command that stays under 8 minutes on an H200 (16 cores): builds
# Ember with CUDA (Release, apps off; only the library, the test executables that have [cuda] cases and
# bench_gpu), runs their [cuda] cases and the CUDA-build checks tagged [cuda_build], then bench_gpu, and
# prints a summary: test cases passed / failed / skipped, the failures, and the bench table.
# A failing test does not stop the bench; the exit status is non-zero when a test, the build or the bench failed.
# Usage: scripts/gpu_check.sh [build-dir]   (default: build-gpu; logs in <build-dir>/gpu_check/)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu}
LOGS="$BUILD/gpu_check"
mkdir -p "$LOGS"
start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start))s"; }

echo "== GPU ($(elapsed))"
# The device's own architecture only (nvcc time); the CI build covers sm_80 and sm_90.
if nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader; then
  archs=native
else
  echo "gpu_check: nvidia-smi sees no GPU: building anyway, the [cuda] cases will skip"
  archs="80;90"
fi

launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi

echo "== configure ($(elapsed))"
if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_APPS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES="$archs" ${launcher[@]+"${launcher[@]}"} > "$LOGS/configure.log" 2>&1; then
  tail -30 "$LOGS/configure.log"
  echo "gpu_check: configure failed (log: $LOGS/configure.log)"
  exit 1
fi

# Every tests/**/test_*.cpp is an executable of that name; those with [cuda] or [cuda_build] cases are built.
tests=$(grep -rlE --include='test_*.cpp' '"[^"]*\[cuda(_build)?\]' tests | xargs -n1 basename | sed 's/\.cpp$//' | sort -u)
echo "== build: ember, bench_gpu and $(echo "$tests" | wc -w) test executables ($(elapsed))"
# shellcheck disable=SC2086
if ! cmake --build "$BUILD" -j "$(nproc)" --target ember bench_gpu $tests > "$LOGS/build.log" 2>&1; then
  grep -E -B2 -A6 "error|Error" "$LOGS/build.log" | head -80
  echo "gpu_check: build failed (log: $LOGS/build.log)"
  exit 1
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

echo "== summary ($(elapsed))"
for name in ${failed_exes[@]+"${failed_exes[@]}"}; do
  echo "--- $name (full log: $LOGS/$name.log)"
  grep -E -A12 "FAILED|FATAL|failed with|Terminate|terminate called" "$LOGS/$name.log" | head -60 || tail -20 "$LOGS/$name.log"
done
echo "test cases: $cases_passed passed, $cases_failed failed, $cases_skipped skipped for want of a GPU"
echo "executables with failures: ${#failed_exes[@]}${failed_exes[*]:+ (${failed_exes[*]})}"
if [ "$bench_rc" -ne 0 ]; then echo "bench_gpu failed (exit $bench_rc)"; else echo "bench_gpu: ok (table above)"; fi
if [ "${#failed_exes[@]}" -ne 0 ] || [ "$bench_rc" -ne 0 ]; then exit 1; fi
