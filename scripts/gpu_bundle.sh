#!/usr/bin/env bash
# Builds here what scripts/gpu_check.sh runs, and packs it with the shared libraries it needs from Debian
# (and Fashion-MNIST, for its training runs) into one file, for a GPU machine that has the CUDA toolkit and cuDNN but not Ember's Debian packages (the
# device tool's machines). The build is Release, for sm_90 (H100/H200) unless CUDA_ARCHS says otherwise, and
# without -march=native so that it runs on that machine's CPU. Run the bundle there with
#   scripts/gpu_check.sh --bundle .gpu/bundle.tar.xz
# The CUDA libraries (cuDNN, cuBLAS, the CUDA runtime) are not packed: gpu_check.sh finds the machine's own.
# Usage: scripts/gpu_bundle.sh [build-dir] [bundle-file]   (defaults: build-gpu-bundle, .gpu/bundle.tar.xz)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-gpu-bundle}
BUNDLE=${2:-.gpu/bundle.tar.xz}
ARCHS=${CUDA_ARCHS:-90}

launcher=()
if command -v ccache > /dev/null; then
  export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ember-ccache}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DEMBER_CUDA=ON -DEMBER_BUILD_APPS=ON -DEMBER_NATIVE=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" ${launcher[@]+"${launcher[@]}"} > /dev/null
tests=$(scripts/gpu_check.sh --list-tests)
# shellcheck disable=SC2086
cmake --build "$BUILD" -j "$(nproc)" --target ember bench_gpu train_fashion_mnist $tests

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/tests" "$stage/bench" "$stage/apps" "$stage/lib" "$stage/data"
for name in $tests; do cp "$BUILD/tests/$name" "$stage/tests/"; done
cp "$BUILD/bench/bench_gpu" "$stage/bench/"
cp "$BUILD/apps/train_fashion_mnist" "$stage/apps/"
# The dataset as the app finds it ($EMBER_DATA_DIR/fashion-mnist), from Debian's dataset-fashion-mnist.
cp -rL /usr/share/datasets/fashion-mnist "$stage/data/"
cp -L "$BUILD/libember.so.0" "$stage/lib/"
strip --strip-unneeded "$stage/lib/libember.so.0" "$stage"/tests/* "$stage"/bench/* "$stage"/apps/*

# Every library the binaries load, except the C/C++ runtime (any newer glibc and libstdc++ serve) and the
# CUDA libraries, which the machine brings (cuBLAS alone is hundreds of MiB): those are listed in machine-libs,
# with cuBLASLt, which Ember dlopens (framework/ops/cuda/cublaslt_loader.cpp).
c_runtime='^(linux-vdso|ld-linux|libc|libm|libdl|librt|libpthread|libresolv|libstdc\+\+|libgcc_s)[.-]'
cuda='^lib(cuda|cudart|cudnn|cublas|cublasLt)\.so'
ldd "$stage/lib/libember.so.0" "$stage"/tests/* "$stage"/bench/* "$stage"/apps/* | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
  sort -u > "$stage/loads"
cuda_lib=$(dirname "$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")")/../lib64
{
  awk '{print $1}' "$stage/loads" | grep -E "$cuda" | grep -v '^libcuda\.so' || true
  find -L "$cuda_lib" -maxdepth 1 -name 'libcublasLt.so.*' -printf '%f\n' | grep -E '^libcublasLt\.so\.[0-9]+$'
} | sort -u > "$stage/machine-libs"
while read -r soname path; do
  grep -qE "$c_runtime|$cuda" <<< "$soname" || cp -nL "$path" "$stage/lib/$soname"
done < "$stage/loads"
rm "$stage/loads"
git rev-parse --short HEAD > "$stage/commit"
# What gpu_check.sh checks the machine against before it starts: the CUDA runtime's version (the driver must
# run it) and the architectures the kernels are built for.
nvcc=$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
"$nvcc" --version | sed -nE 's/.*release ([0-9]+\.[0-9]+).*/\1/p' > "$stage/cuda-version"
tr ';' '\n' <<< "$ARCHS" | sed -E 's/-(real|virtual)$//' > "$stage/cuda-archs"

mkdir -p "$(dirname "$BUNDLE")"
tar -C "$stage" -cf - . | xz -T0 -6 > "$BUNDLE.tmp"
mv "$BUNDLE.tmp" "$BUNDLE"
echo "gpu_bundle: $BUNDLE ($(du -h "$BUNDLE" | cut -f1), commit $(cat "$stage/commit")); needs from the machine: $(tr '\n' ' ' < "$stage/machine-libs")"
