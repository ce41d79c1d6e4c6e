#pragma once
// Device-side element types for kernels (.cu only): Ember's DType order mirrored without Ember's
// C++20 headers, the storage type of each (CUDA's __half/__nv_bfloat16 share Eigen::half's and
// Eigen::bfloat16's bit layout), loads to and stores from the functors' compute type, and a dispatch
// macro binding `scalar_t` to the storage type.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "framework/ops/cuda/cuda_dt.h"

namespace ember::cuda {

// The type the shared functors compute in: float for the half types, the type itself otherwise.
template <class T> struct compute_type { using type = T; };
template <> struct compute_type<__half> { using type = float; };
template <> struct compute_type<__nv_bfloat16> { using type = float; };
template <class T> using compute_t = typename compute_type<T>::type;

template <class T>
__device__ __forceinline__ compute_t<T> load(const T* p, int64_t i) { return p[i]; }
template <>
__device__ __forceinline__ float load<__half>(const __half* p, int64_t i) { return __half2float(p[i]); }
template <>
__device__ __forceinline__ float load<__nv_bfloat16>(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}

// Converts a compute value to storage T (round to nearest even for the half types, as Eigen does).
template <class T, class C>
__device__ __forceinline__ T to_storage(C v) { return static_cast<T>(v); }
template <>
__device__ __forceinline__ __half to_storage<__half, float>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 to_storage<__nv_bfloat16, float>(float v) { return __float2bfloat16_rn(v); }

// a * b + c rounded once, spelt out (nvcc's -fmad would otherwise decide whether to fuse).
__device__ __forceinline__ float fma_rn(float a, float b, float c) { return __fmaf_rn(a, b, c); }
__device__ __forceinline__ double fma_rn(double a, double b, double c) { return __fma_rn(a, b, c); }

}  // namespace ember::cuda

// A grid-stride loop of a 1-D launch: `i` takes this thread's indices in [0, n).
#define EMBER_CUDA_GRID_STRIDE_LOOP(i, n)                                                  \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

#define EMBER_CUDA_CASE(code, type, ...) \
  case ::ember::cuda::DT::code: {        \
    using scalar_t = type;               \
    __VA_ARGS__;                         \
    break;                               \
  }
// The cases of a dtype switch, by dtype set: each binds scalar_t to its DT's storage type and runs the body.
#define EMBER_CUDA_CASES_FLOATING(...)                 \
  EMBER_CUDA_CASE(F32, float, __VA_ARGS__)             \
  EMBER_CUDA_CASE(F64, double, __VA_ARGS__)            \
  EMBER_CUDA_CASE(F16, __half, __VA_ARGS__)            \
  EMBER_CUDA_CASE(BF16, __nv_bfloat16, __VA_ARGS__)
#define EMBER_CUDA_CASES_NUMERIC(...)                  \
  EMBER_CUDA_CASES_FLOATING(__VA_ARGS__)               \
  EMBER_CUDA_CASE(I32, int32_t, __VA_ARGS__)           \
  EMBER_CUDA_CASE(I64, int64_t, __VA_ARGS__)           \
  EMBER_CUDA_CASE(U8, uint8_t, __VA_ARGS__)
#define EMBER_CUDA_CASES_ALL(...)                      \
  EMBER_CUDA_CASES_NUMERIC(__VA_ARGS__)                \
  EMBER_CUDA_CASE(Bool, bool, __VA_ARGS__)
// Runs the body with scalar_t bound to the storage type of `dt` (a DT) when dt is in the set, else nothing.
#define EMBER_CUDA_DISPATCH_ALL(dt, ...) \
  switch (dt) {                          \
    EMBER_CUDA_CASES_ALL(__VA_ARGS__)    \
    default: break;                      \
  }
#define EMBER_CUDA_DISPATCH_FLOATING(dt, ...) \
  switch (dt) {                               \
    EMBER_CUDA_CASES_FLOATING(__VA_ARGS__)    \
    default: break;                           \
  }
// Every dtype but bool (the reductions' arithmetic types).
#define EMBER_CUDA_DISPATCH_NUMERIC(dt, ...) \
  switch (dt) {                              \
    EMBER_CUDA_CASES_NUMERIC(__VA_ARGS__)    \
    default: break;                          \
  }
