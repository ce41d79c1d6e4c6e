#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build with CUDA, run the [cuda] tests and the benchmarks, in one
# command that stays under 8 minutes (the device tool's budget). Prints what it ran and the results.
set -euo pipefail
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_APPS=OFF > /dev/null
cmake --build build-gpu -j "$(nproc)" 2>&1 | tail -3
for t in build-gpu/tests/test_*; do
  [ -x "$t" ] || continue
  # Test executables without [cuda] cases report "No test cases matched"; that is not a failure here.
  "$t" "[cuda]" --reporter compact 2>&1 | grep -v "No test cases matched" || true
done
for b in build-gpu/bench/bench_*; do timeout 120 "$b" --json || echo "{\"name\":\"$(basename "$b")\",\"error\":\"failed\"}"; done
