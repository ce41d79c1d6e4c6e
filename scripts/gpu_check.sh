#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: builds Ember with CUDA (Release; only the library, the test executables
# that have [cuda] cases, bench_gpu and train_fashion_mnist) or unpacks a bundle of them, checks the driver and
# the CUDA libraries, runs the [cuda] cases and the CUDA-build checks tagged [cuda_build], bench_gpu (with its
# ResNet-50 rows on their own), the app's MLP and CNN for 5 epochs on the GPU (checking their test accuracy),
# and bench/compare_pytorch_gpu.py (the same ResNet-50 and epochs in PyTorch on the same GPU). Each result is
# printed as it comes, and the summary is printed on any exit (an EXIT trap): test cases passed / failed /
# skipped, the failures, the benchmark rows, each training run's last line and accuracy check.
# Every benchmark row (bench/bench_util.h's JSON: name, value, unit, reference, reference_value, speedup) is
# written as it comes to $GPU_CHECK_RESULTS/<date>-<device>.jsonl (default bench/results/gpu/).
#
# Time: after the build or the unpack, every step runs under its own limit (LIMIT_* below, 490 s together)
# and also under what is left of BUDGET (510 s), so a --bundle run, unpack included, ends with its summary
# well inside one 10-minute command. A run that builds adds the build's time before that.
#
# A failing step does not stop the rest. Exit status: 0 all passed; 1 a test (a [cuda] case skipped while a GPU
# is visible counts as failed), the build, a benchmark, a training run or its accuracy failed, or the driver or
# a library is missing; 2 no GPU is visible (a build still builds and runs the [cuda_build] checks; a bundle
# stops at once).
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
  # shellcheck disable=SC2086  # on one line
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
RESULTS_DIR=${GPU_CHECK_RESULTS:-bench/results/gpu}

# Seconds; the limits add up to 505. Estimates, not measurements: the ResNet-50 and PyTorch steps have not run
# on a GPU yet (each "== step (Ns)" line shows when it started; set the limits from the first runs). An earlier
# H200 run gave the app's epochs 0.36-1.04 s, so a 5-epoch run is well under LIMIT_TRAIN.
BUDGET=${GPU_CHECK_BUDGET:-510}
LIMIT_TESTS=140    # all test executables together
LIMIT_BENCH=60     # bench_gpu's matmul, dispatch, small-model, batch-norm, graph and fusion rows
LIMIT_RESNET=90    # bench_gpu --only resnet50
LIMIT_TRAIN=15     # each of the seven training runs (5 epochs of 0.3-1.1 s, and loading the data)
LIMIT_PYTORCH=110  # bench/compare_pytorch_gpu.py
# Test accuracy after 5 epochs at seed 42, at least (an H200 gave MLP 0.8700, CNN 0.8882, CNN mixed_float16
# 0.8881; the CPU's CNN 0.8897, Keras's 0.8885).
MIN_ACCURACY_MLP=0.85
MIN_ACCURACY_CNN=0.87
limits_total=$((LIMIT_TESTS + LIMIT_BENCH + LIMIT_RESNET + 7 * LIMIT_TRAIN + LIMIT_PYTORCH))

start=$(date +%s)
elapsed() { echo "$(($(date +%s) - start))s"; }
# The limit for a step: its own, cut to what is left of BUDGET less 10 s for the summary (at least 1).
limit() {
  local left=$((BUDGET - ($(date +%s) - start) - 10))
  [ "$left" -ge 1 ] || left=1
  echo $(($1 < left ? $1 : left))
}

# The summary's state, filled in as the steps run.
phase=start
has_gpu=0
cases_passed=0 cases_failed=0 cases_skipped=0
failed_exes=()
problems=()   # one line for each failure that is not a test's
train_lines=()
rows_file=
results_file=

# "name value unit reference reference_value speedup" of bench_util.h's JSON rows, as an aligned table.
table() {
  sed -nE 's/^\{"name": "([^"]*)", "value": ([^,]*), "unit": "([^"]*)", "reference": "([^"]*)", "reference_value": ([^,]*), "speedup": ([^}]*)\}$/\1 \2 \3 \4 \5 \6/p' "$@" |
    while read -r name value unit ref ref_value speedup; do
      printf "  %-40s %12.4g %-6s %-40s %12.4g  %.3fx\n" "$name" "$value" "$unit" "$ref" "$ref_value" "$speedup"
    done
}

summary() {
  local rc=$?
  trap - EXIT
  exec 1>&3 2>&4  # a signal's trap can run inside a step's redirection to its log
  echo "== summary ($(elapsed); $phase)"
  [ "$phase" = finished ] || problems+=("stopped during: $phase (exit $rc)")
  for name in ${failed_exes[@]+"${failed_exes[@]}"}; do
    echo "--- $name (full log: $LOGS/$name.log)"
    grep -E -A12 "FAILED|FATAL|failed with|Terminate|terminate called" "$LOGS/$name.log" | head -60 ||
      tail -20 "$LOGS/$name.log" || true
  done
  local why=""
  if [ "$cases_skipped" -gt 0 ]; then
    why=" for want of a GPU"
    [ "$has_gpu" -eq 0 ] || why=" (counted as failed: a GPU is visible)"
  fi
  echo "test cases: $cases_passed passed, $cases_failed failed, $cases_skipped skipped$why"
  echo "executables with failures: ${#failed_exes[@]}${failed_exes[*]:+ (${failed_exes[*]})}"
  if [ -n "$results_file" ] && [ -s "$results_file" ]; then
    echo "benchmark rows ($(wc -l < "$results_file") in $results_file):"
    table "$results_file"
  fi
  [ "${#train_lines[@]}" -eq 0 ] || printf "train_fashion_mnist: %s\n" "${train_lines[@]}"
  for p in ${problems[@]+"${problems[@]}"}; do echo "FAILED: $p"; done
  if [ "$has_gpu" -eq 0 ]; then
    echo "gpu_check: NO GPU VISIBLE: nothing ran on a GPU (exit 2)"
    exit 2
  fi
  if [ "${#failed_exes[@]}" -ne 0 ] || [ "${#problems[@]}" -ne 0 ] || [ "$rc" -ne 0 ]; then
    echo "gpu_check: FAILED"
    exit 1
  fi
  echo "gpu_check: all passed"
  exit 0
}
exec 3>&1 4>&2
trap summary EXIT
# Bash runs a trap only after the foreground command ends, so each step runs in the background (limited) and
# a TERM or INT stops it and prints the summary at once.
child=
limited() {
  local lim=$1 rc=0
  shift
  timeout "$lim" "$@" &
  child=$!
  wait "$child" || rc=$?
  child=
  return "$rc"
}
on_signal() {
  [ -z "$child" ] || kill "$child" 2> /dev/null || true
  exit "$1"
}
trap 'on_signal 143' TERM
trap 'on_signal 130' INT

mkdir -p "$LOGS"

echo "== GPU ($(elapsed); the steps' limits: $limits_total s, within a budget of $BUDGET s)"
phase="GPU and driver checks"
gpu_query=
if ! command -v nvidia-smi > /dev/null; then
  echo "gpu_check: NO GPU VISIBLE: nvidia-smi is not installed"
elif ! gpu_query=$(nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>&1) ||
    [ -z "$gpu_query" ]; then
  echo "gpu_check: NO GPU VISIBLE: nvidia-smi says: ${gpu_query:-nothing}"
  gpu_query=
else
  has_gpu=1
  echo "$gpu_query"
fi
if [ "$has_gpu" -eq 0 ]; then
  if [ -n "$BUNDLE" ]; then phase=finished; exit 2; fi  # a bundle is for a GPU machine: nothing to check here
  echo "gpu_check: building and running the [cuda_build] checks only; the [cuda] cases will skip"
  archs="80;90"
else
  gpu_name=$(head -1 <<< "$gpu_query" | cut -d, -f1 | sed 's/^ *//; s/ *$//')
  driver=$(head -1 <<< "$gpu_query" | cut -d, -f3 | tr -d ' ')
  cc=$(head -1 <<< "$gpu_query" | cut -d, -f4 | tr -d ' .')
  # The newest CUDA the driver runs (nvidia-smi's banner); the runtime Ember was built with must not be newer
  # in its major version (a newer minor runs through CUDA's minor-version compatibility).
  driver_cuda=$(nvidia-smi | sed -nE 's/.*CUDA Version: *([0-9]+\.[0-9]+).*/\1/p' | head -1)
  echo "driver $driver runs CUDA up to ${driver_cuda:-?}; device architecture sm_$cc"
  archs=native  # the device's own architecture only (nvcc time); the CI build covers sm_80 and sm_90
  device_tag=$(tr '[:upper:] ' '[:lower:]-' <<< "$gpu_name" | tr -cd 'a-z0-9-')
fi

# Whether the runtime version $1 (major.minor) runs on this driver; says why not.
check_driver() {
  local built=$1
  [ "$has_gpu" -eq 1 ] && [ -n "$built" ] || return 0
  if [ -z "$driver_cuda" ]; then
    echo "gpu_check: nvidia-smi does not say which CUDA the driver runs; built with $built"
  elif [ "${built%%.*}" -gt "${driver_cuda%%.*}" ]; then
    problems+=("driver $driver runs CUDA up to $driver_cuda; Ember was built with CUDA $built: update the driver or build with CUDA ${driver_cuda%%.*}")
    return 1
  elif [ "$(printf '%s\n' "$built" "$driver_cuda" | sort -V | tail -1)" != "$driver_cuda" ]; then
    echo "gpu_check: built with CUDA $built, the driver's is $driver_cuda: relying on minor-version compatibility"
  fi
}

# The loader's cache, read once; a library named there is found without LD_LIBRARY_PATH. Its lines are
# "<TAB>libcudnn.so.9 (libc6,x86-64) => /path", so the soname is the first field.
ldcache=$( (ldconfig -p 2> /dev/null || /sbin/ldconfig -p 2> /dev/null) | tail -n +2 || true)
on_loader_path() { awk -v lib="$1" '$1 == lib {found = 1} END {exit !found}' <<< "$ldcache"; }

unpack_bundle() {
  echo "== unpack $BUNDLE ($(elapsed))"
  rm -rf "$BUILD"
  mkdir -p "$BUILD"
  tar -xJf "$BUNDLE" -C "$BUILD"
  echo "bundle of commit $(cat "$BUILD/commit")"
  if [ -f "$BUILD/cuda-archs" ] && [ "$has_gpu" -eq 1 ] && ! grep -qw "$cc" "$BUILD/cuda-archs"; then
    problems+=("the bundle is built for sm_$(tr '\n' ' ' < "$BUILD/cuda-archs")and this GPU is sm_$cc: rebuild it with CUDA_ARCHS=$cc scripts/gpu_bundle.sh")
    return 1
  fi
  check_driver "$(cat "$BUILD/cuda-version" 2> /dev/null || true)" || return 1
  # Where the machine keeps the CUDA libraries off the loader's path: the toolkit, and the nvidia-* wheels
  # that PyTorch installs into site-packages.
  local roots=(/usr/local /opt /usr/lib) site
  if command -v python3 > /dev/null; then
    for site in $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2> /dev/null || true); do
      [[ "$site" == /usr/local/* || "$site" == /usr/lib/* ]] || roots+=("$site")
    done
  fi
  local dirs="$BUILD/lib" lib path missing=()
  # shellcheck disable=SC2013  # sonames, without spaces
  for lib in $(cat "$BUILD/machine-libs"); do
    on_loader_path "$lib" && continue
    path=$(find "${roots[@]}" -name "$lib" -print -quit 2> /dev/null || true)
    if [ -z "$path" ]; then
      missing+=("$lib")
    elif [[ ":$dirs:" != *":$(dirname "$path"):"* ]]; then
      dirs+=":$(dirname "$path")"
    fi
  done
  export LD_LIBRARY_PATH="$dirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  local unresolved
  unresolved=$(ldd "$BUILD/lib/libember.so.0" "$BUILD"/tests/* "$BUILD"/bench/* "$BUILD"/apps/* 2>&1 |
    grep "not found" | sort -u || true)
  if [ "${#missing[@]}" -ne 0 ] || [ -n "$unresolved" ]; then
    [ -z "$unresolved" ] || echo "$unresolved"
    problems+=("libraries missing on this machine: ${missing[*]:-}${unresolved:+ (ldd: $(awk '{print $1}' <<< "$unresolved" | tr '\n' ' '))}")
    return 1
  fi
  export EMBER_DATA_DIR="$BUILD/data"
}

if [ -n "$BUNDLE" ]; then
  phase="unpack and library checks"
  unpack_bundle
else
  phase="driver check"
  check_driver "$(nvcc --version 2> /dev/null | sed -nE 's/.*release ([0-9]+\.[0-9]+).*/\1/p')"
  launcher=()
  if command -v ccache > /dev/null; then
    export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi

  echo "== configure ($(elapsed))"
  phase=configure
  if ! cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_APPS=ON \
      -DCMAKE_CUDA_ARCHITECTURES="$archs" ${launcher[@]+"${launcher[@]}"} > "$LOGS/configure.log" 2>&1; then
    tail -30 "$LOGS/configure.log"
    problems+=("configure (log: $LOGS/configure.log)")
    exit 1
  fi

  echo "== build: ember, bench_gpu, train_fashion_mnist and $(echo "$tests" | wc -w) test executables ($(elapsed))"
  phase=build
  # shellcheck disable=SC2086
  if ! cmake --build "$BUILD" -j "$(nproc)" --target ember bench_gpu train_fashion_mnist $tests > "$LOGS/build.log" 2>&1; then
    grep -E -B2 -A6 "error|Error" "$LOGS/build.log" | head -80
    problems+=("build (log: $LOGS/build.log)")
    exit 1
  fi
  start=$(date +%s)  # the steps' budget starts after the build
  echo "== built; the steps' time budget ($BUDGET s) starts now"
fi

if [ "$has_gpu" -eq 1 ]; then
  mkdir -p "$RESULTS_DIR"
  results_file="$RESULTS_DIR/$(date -u +%F)-$device_tag.jsonl"
  : > "$results_file"
fi
rows_file="$LOGS/ember_rows.jsonl"  # Ember's rows, for the PyTorch script to compare against
: > "$rows_file"
# Appends JSON rows from stdin to Ember's rows (unless $1 is "pytorch") and the results file, and shows them.
record() {
  local rows
  rows=$(grep -E '^\{"name": ' || true)
  [ -n "$rows" ] || return 0
  [ "${1:-}" = pytorch ] || echo "$rows" >> "$rows_file"
  [ -z "$results_file" ] || echo "$rows" >> "$results_file"
  table <<< "$rows"
}

echo "== tests ($(elapsed); $(limit "$LIMIT_TESTS") s for all)"
phase=tests
tests_end=$(($(date +%s) + $(limit "$LIMIT_TESTS")))
for name in $tests; do
  log="$LOGS/$name.log"
  rc=0
  left=$((tests_end - $(date +%s)))
  if [ "$left" -lt 1 ]; then
    echo "$name: not run: the tests' time ($LIMIT_TESTS s) is spent" > "$log"
    rc=124
  else
    limited "$left" "$BUILD/tests/$name" "[cuda],[cuda_build]" > "$log" 2>&1 || rc=$?
  fi
  # Catch2's last lines: "All tests passed (A assertions in C test cases)" or "test cases: C | P passed | F failed".
  passed=0 failed=0
  if line=$(grep -E "^All tests passed" "$log" | tail -1); then
    passed=$(sed -E 's/.* in ([0-9]+) test case.*/\1/' <<< "$line")
  elif line=$(grep -E "^test cases:" "$log" | tail -1); then
    passed=$(grep -oE "[0-9]+ passed" <<< "$line" | grep -oE "[0-9]+" || echo 0)
    failed=$(grep -oE "[0-9]+ failed" <<< "$line" | grep -oE "[0-9]+" || echo 0)
  fi
  skipped=$(grep -c "no CUDA device" "$log" || true)  # Catch2 counts a skipped case as passed
  passed=$((passed > skipped ? passed - skipped : 0))
  status=ok
  if [ "$has_gpu" -eq 1 ] && [ "$skipped" -gt 0 ]; then
    failed=$((failed + skipped))  # the GPU is visible to nvidia-smi but not to Ember: a failure
    status="FAILED ($skipped [cuda] cases skipped with a GPU visible)"
    failed_exes+=("$name")
  fi
  if [ "$rc" -ne 0 ]; then
    [ "$failed" -ne 0 ] || failed=1  # crashed, timed out (124) or aborted
    status="FAILED (exit $rc$([ "$rc" -ne 124 ] || echo ": time limit"))"
    [[ " ${failed_exes[*]:-} " == *" $name "* ]] || failed_exes+=("$name")
  fi
  cases_passed=$((cases_passed + passed)) cases_failed=$((cases_failed + failed))
  cases_skipped=$((cases_skipped + skipped))
  printf "%-28s %3s passed %3s failed %3s skipped  %s\n" "$name" "$passed" "$failed" "$skipped" "$status"
done

if [ "$has_gpu" -eq 0 ]; then
  phase=finished
  exit 2
fi

# Runs bench_gpu with its arguments under a limit and records its rows; $1 names the step.
bench() {
  local step=$1 lim=$2 rc=0
  shift 2
  echo "== bench_gpu $* ($(elapsed); limit $(limit "$lim") s)"
  phase="bench_gpu $*"
  limited "$(limit "$lim")" "$BUILD/bench/bench_gpu" --json "$@" > "$LOGS/$step.jsonl" 2> "$LOGS/$step.log" || rc=$?
  record < "$LOGS/$step.jsonl"
  if [ "$rc" -ne 0 ]; then
    tail -5 "$LOGS/$step.log"
    problems+=("bench_gpu $* (exit $rc$([ "$rc" -ne 124 ] || echo ": time limit"); log: $LOGS/$step.log)")
  fi
}
bench bench_gpu "$LIMIT_BENCH" --only seeds,matmul,dispatch,train,batch_norm,graphs,fusion
bench bench_gpu_resnet50 "$LIMIT_RESNET" --only resnet50

# The app's models trained on the GPU for the default 5 epochs: the last line (test accuracy, seconds per
# epoch) goes in the summary, the accuracy is checked, and the seconds per epoch are a benchmark row
# (<model>_epoch_<precision>) for the PyTorch comparison. fit traces its steps (graph mode, CUDA graphs
# replaying them); to compare with, the MLP and CNN also run with --run-eagerly, op by op (rows
# <model>_epoch_<precision>_eager), the MLP with CUDA graphs off (EMBER_CUDA_GRAPHS=0: _nographs) and on the
# CPU (_cpu). Then the comparisons as rows with a reference: <model>_epoch_float32_compiled_vs_eager (the aim:
# 5x for the MLP), mlp_epoch_float32_cuda_graphs_vs_none, mlp_epoch_float32_gpu_vs_cpu (above 1) and
# cnn_epoch_mixed_float16_vs_float32 (above 1). Needs Fashion-MNIST (Debian's dataset-fashion-mnist, or the
# bundle's copy).
echo "== training on the GPU ($(elapsed))"
declare -A epoch_seconds=()
for run in "mlp float32 $MIN_ACCURACY_MLP" "mlp float32 $MIN_ACCURACY_MLP eager" \
           "mlp float32 $MIN_ACCURACY_MLP nographs" "mlp float32 $MIN_ACCURACY_MLP cpu" \
           "cnn float32 $MIN_ACCURACY_CNN" "cnn float32 $MIN_ACCURACY_CNN eager" \
           "cnn mixed_float16 $MIN_ACCURACY_CNN"; do
  read -r model precision min_accuracy mode <<< "$run"
  suffix=${mode:+_$mode}
  phase="training $model $precision${mode:+ $mode}"
  log="$LOGS/train_${model}_$precision$suffix.log"
  device=gpu graphs=1 eagerly=()
  case "$mode" in
    eager) eagerly=(--run-eagerly) ;;
    nographs) graphs=0 ;;
    cpu) device=cpu ;;
  esac
  rc=0
  limited "$(limit "$LIMIT_TRAIN")" env EMBER_CUDA_GRAPHS="$graphs" "$BUILD/apps/train_fashion_mnist" \
    --device "$device" --model "$model" --precision "$precision" --verbose 2 "${eagerly[@]}" > "$log" 2>&1 || rc=$?
  last=$(tail -1 "$log")
  accuracy=$(sed -nE 's/.*test_accuracy=([0-9.]+).*/\1/p' <<< "$last")
  seconds=$(sed -nE 's/.*seconds_per_epoch=([0-9.]+).*/\1/p' <<< "$last")
  verdict=""
  if [ "$rc" -ne 0 ]; then
    verdict=" (exit $rc$([ "$rc" -ne 124 ] || echo ": time limit"))"
    problems+=("training $model $precision$verdict; log: $log")
  elif [ -z "$accuracy" ]; then
    verdict=" (no test_accuracy in its last line)"
    problems+=("training $model $precision$verdict; log: $log")
  elif awk -v a="$accuracy" -v m="$min_accuracy" 'BEGIN {exit !(a < m)}'; then
    verdict=" (accuracy $accuracy < $min_accuracy: FAILED)"
    problems+=("training $model $precision: test accuracy $accuracy below $min_accuracy")
  else
    verdict=" (accuracy >= $min_accuracy: ok)"
  fi
  train_lines+=("$(printf "%-4s %-22s %s%s" "$model" "$precision${mode:+ $mode}" "$last" "$verdict")")
  echo "${train_lines[-1]}"
  if [ "$rc" -eq 0 ] && [ -n "$seconds" ]; then
    epoch_seconds["${model}_$precision$suffix"]=$seconds
    printf '{"name": "%s_epoch_%s%s", "value": %s, "unit": "s", "reference": "none", "reference_value": 0, "speedup": 0}\n' \
      "$model" "$precision" "$suffix" "$seconds" | record
  fi
done
# A comparison row: $1 its name, $2 the measured run, $3 the reference run (keys of epoch_seconds); speedup is the
# reference's seconds per epoch over the run's. Skipped when either run gave no figure.
compare_epochs() {
  local run=${epoch_seconds[$2]:-} ref=${epoch_seconds[$3]:-}
  [ -n "$run" ] && [ -n "$ref" ] || return 0
  awk -v n="$1" -v v="$run" -v r="${3%%_*}_epoch_${3#*_}" -v rv="$ref" 'BEGIN {
    printf "{\"name\": \"%s\", \"value\": %s, \"unit\": \"s\", \"reference\": \"%s\", \"reference_value\": %s, \"speedup\": %.3f}\n",
      n, v, r, rv, (v > 0 ? rv / v : 0) }' | record
}
compare_epochs mlp_epoch_float32_compiled_vs_eager mlp_float32 mlp_float32_eager
compare_epochs cnn_epoch_float32_compiled_vs_eager cnn_float32 cnn_float32_eager
compare_epochs mlp_epoch_float32_cuda_graphs_vs_none mlp_float32 mlp_float32_nographs
compare_epochs mlp_epoch_float32_gpu_vs_cpu mlp_float32 mlp_float32_cpu
compare_epochs cnn_epoch_mixed_float16_vs_float32 cnn_mixed_float16 cnn_float32

# PyTorch on the same GPU: its own rows, and Ember's against them (resnet50_mixed_float16_vs_pytorch_amp, ...).
echo "== PyTorch ($(elapsed); limit $(limit "$LIMIT_PYTORCH") s)"
phase="PyTorch comparison"
python=${GPU_CHECK_PYTHON:-python3}
if ! "$python" -c 'import torch' > /dev/null 2>&1; then
  problems+=("PyTorch: $python cannot import torch (set GPU_CHECK_PYTHON to a Python that can)")
else
  rc=0
  limited "$(limit "$LIMIT_PYTORCH")" "$python" bench/compare_pytorch_gpu.py --json --ember-rows "$rows_file" \
    > "$LOGS/pytorch.jsonl" 2> "$LOGS/pytorch.log" || rc=$?
  record pytorch < "$LOGS/pytorch.jsonl"
  if [ "$rc" -ne 0 ]; then
    tail -5 "$LOGS/pytorch.log"
    problems+=("bench/compare_pytorch_gpu.py (exit $rc$([ "$rc" -ne 124 ] || echo ": time limit"); log: $LOGS/pytorch.log)")
  fi
fi
phase=finished
