// CUDA kernels of the creation ops: fill, range and linspace, element by element in the compute type (float for
// the half types), each element computed directly from its index as the CPU kernel does (no running sum).
//
// Multiply-add: the CPU kernels write `start + i * delta` and `start + step * i`; the Release build
// (-march=native, GCC's default -ffp-contract=fast for C++) contracts these into one fused multiply-add on any
// FMA-capable host, so the fused form is spelt out here with __fmaf_rn/__fma_rn rather than left to nvcc's
// -fmad default. A CPU build without FMA (EMBER_NATIVE=OFF) rounds the product separately and can differ in
// the last bit.
#include <cstdint>

#include "framework/ops/cuda/creation_launch.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"

namespace ember::cuda {
namespace {

template <class E>
__global__ void cr_fill_kernel(E* __restrict__ y, int64_t n, E v) {
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) y[i] = v;
}

template <class T>
__global__ void cr_range_integer_kernel(T* __restrict__ y, int64_t n, int64_t start, int64_t delta) {
  // Unsigned arithmetic: the same bits as the CPU's int64 expression, without signed-overflow UB.
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n)
    y[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
}

template <class T>
__global__ void cr_range_floating_kernel(T* __restrict__ y, int64_t n, compute_t<T> start, compute_t<T> delta) {
  using C = compute_t<T>;
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n)
    y[i] = to_storage<T>(fma_rn(static_cast<C>(i), delta, start));
}

template <class T>
__global__ void cr_linspace_kernel(T* __restrict__ y, int64_t n, compute_t<T> start, compute_t<T> stop,
                                   compute_t<T> step) {
  using C = compute_t<T>;
  EMBER_CUDA_GRID_STRIDE_LOOP(i, n) {
    C v;
    if (n == 1) v = start;
    else if (i == n - 1) v = stop;
    else v = fma_rn(step, static_cast<C>(i), start);
    y[i] = to_storage<T>(v);
  }
}

#define CR_CASES_FLOAT(...)                          \
  EMBER_CUDA_CASE(F32, float, __VA_ARGS__)           \
  EMBER_CUDA_CASE(F64, double, __VA_ARGS__)          \
  EMBER_CUDA_CASE(F16, __half, __VA_ARGS__)          \
  EMBER_CUDA_CASE(BF16, __nv_bfloat16, __VA_ARGS__)

}  // namespace

bool launch_fill(int element_size, uint64_t bits, void* y, int64_t n, cudaStream_t stream) {
  const unsigned int blocks = blocks_for(n);
  switch (element_size) {
    case 1:
      cr_fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint8_t*>(y), n, static_cast<uint8_t>(bits));
      return true;
    case 2:
      cr_fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint16_t*>(y), n, static_cast<uint16_t>(bits));
      return true;
    case 4:
      cr_fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint32_t*>(y), n, static_cast<uint32_t>(bits));
      return true;
    case 8:
      cr_fill_kernel<<<blocks, kThreads, 0, stream>>>(static_cast<uint64_t*>(y), n, bits);
      return true;
    default: return false;
  }
}

bool launch_range_integer(DT dt, void* y, int64_t n, int64_t start, int64_t delta, cudaStream_t stream) {
  switch (dt) {
    EMBER_CUDA_CASE(I32, int32_t, cr_range_integer_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
                                      static_cast<scalar_t*>(y), n, start, delta))
    EMBER_CUDA_CASE(I64, int64_t, cr_range_integer_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
                                      static_cast<scalar_t*>(y), n, start, delta))
    default: return false;
  }
  return true;
}

bool launch_range_floating(DT dt, void* y, int64_t n, double start, double delta, cudaStream_t stream) {
  switch (dt) {
    CR_CASES_FLOAT(using C = compute_t<scalar_t>;
                   cr_range_floating_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
                       static_cast<scalar_t*>(y), n, static_cast<C>(start), static_cast<C>(delta)))
    default: return false;
  }
  return true;
}

bool launch_linspace(DT dt, void* y, int64_t n, double start, double stop, double step, cudaStream_t stream) {
  switch (dt) {
    CR_CASES_FLOAT(using C = compute_t<scalar_t>;
                   cr_linspace_kernel<<<blocks_for(n), kThreads, 0, stream>>>(
                       static_cast<scalar_t*>(y), n, static_cast<C>(start), static_cast<C>(stop),
                       static_cast<C>(step)))
    default: return false;
  }
  return true;
}

}  // namespace ember::cuda
