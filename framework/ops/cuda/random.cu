// CUDA kernels of random_uniform, random_normal and truncated_normal: one thread per Philox block, mirroring
// framework/ops/cpu/random.cpp element for element (same block of each element, same words, same
// conversions from philox.h, the same redraw rule for truncated_normal).
//
// What can differ from the CPU: the normals go through logf/sinf/cosf (log/sin/cos for float64), whose CUDA
// versions are within 1-2 ulp but not bitwise glibc's, so normal samples agree with the CPU to a few ulp, not
// bitwise (and a truncated_normal draw landing within that error of +-2 may be kept on one side and redrawn on
// the other). The uniforms use only exact integer and IEEE arithmetic and are bitwise the CPU's, given the
// multiply-add below.
//
// Multiply-add: `u * range + lo` and `z * stddev + mean` are one fused multiply-add (__fmaf_rn/__fma_rn), as
// the CPU kernels' std::fma, whatever either compiler would fuse on its own.
#include <cstdint>
#include <type_traits>

#include "framework/core/philox.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/random_launch.h"

namespace ember::cuda {
namespace {

// Elements per Philox block: two 64-bit or four 32- and 16-bit samples (TF's layout, the CPU's per_block).
template <class T>
constexpr int rn_per_block() {
  return sizeof(T) == 8 ? 2 : 4;
}

// Standard normal samples of one block: Box-Muller on word pairs (on both pairs together for double).
template <class T>
__device__ __forceinline__ void rn_normals_of(const philox::Uint4& b, compute_t<T>* z) {
  if constexpr (std::is_same<T, double>::value) {
    philox::box_muller_double(b.v[0], b.v[1], b.v[2], b.v[3], z[0], z[1]);
  } else {
    philox::box_muller_float(b.v[0], b.v[1], z[0], z[1]);
    philox::box_muller_float(b.v[2], b.v[3], z[2], z[3]);
  }
}

template <class T>
__global__ void rn_uniform_integer_kernel(T* __restrict__ y, int64_t n, uint64_t key, uint64_t counter, int64_t lo,
                                          uint64_t range) {
  using U = typename std::make_unsigned<T>::type;
  constexpr int k = rn_per_block<T>();
  const int64_t blocks = (n + k - 1) / k;
  const U ulo = static_cast<U>(static_cast<T>(lo)), urange = static_cast<U>(range);
  EMBER_CUDA_GRID_STRIDE_LOOP(b, blocks) {
    const philox::Uint4 w = philox::block(key, counter + static_cast<uint64_t>(b));
    const int64_t i0 = b * k;
#pragma unroll
    for (int j = 0; j < k; ++j) {
      if (i0 + j >= n) break;
      U bits;
      if constexpr (sizeof(T) == 8)
        bits = static_cast<U>(w.v[2 * j] | (static_cast<uint64_t>(w.v[2 * j + 1]) << 32));
      else
        bits = static_cast<U>(w.v[j]);
      // Unsigned, so that maxval - minval may exceed the signed range (TF's SignedAdd), as on the CPU.
      y[i0 + j] = static_cast<T>(static_cast<U>(ulo + static_cast<U>(bits % urange)));
    }
  }
}

template <class T>
__global__ void rn_uniform_floating_kernel(T* __restrict__ y, int64_t n, uint64_t key, uint64_t counter,
                                           compute_t<T> lo, compute_t<T> range) {
  using C = compute_t<T>;
  constexpr int k = rn_per_block<T>();
  const int64_t blocks = (n + k - 1) / k;
  EMBER_CUDA_GRID_STRIDE_LOOP(b, blocks) {
    const philox::Uint4 w = philox::block(key, counter + static_cast<uint64_t>(b));
    const int64_t i0 = b * k;
#pragma unroll
    for (int j = 0; j < k; ++j) {
      if (i0 + j >= n) break;
      C u;
      if constexpr (std::is_same<T, double>::value)
        u = philox::uint64_to_double(w.v[2 * j], w.v[2 * j + 1]);
      else if constexpr (std::is_same<T, __half>::value)
        u = philox::uint32_to_half_uniform(w.v[j]);
      else if constexpr (std::is_same<T, __nv_bfloat16>::value)
        u = philox::uint32_to_bfloat16_uniform(w.v[j]);
      else
        u = philox::uint32_to_float(w.v[j]);
      y[i0 + j] = to_storage<T>(fma_rn(u, range, lo));
    }
  }
}

// Past this many redraws a truncated_normal element gives up and takes 0 (the CPU's kMaxTruncatedRounds).
constexpr uint64_t kRnMaxTruncatedRounds = 64;

// random_normal, and truncated_normal when Truncated: element i's r-th attempt is value i % per_block of block
// (counter + i / per_block, r), round 0 being random_normal's draw, exactly as the CPU's truncated_normal_fill.
template <class T, bool Truncated>
__global__ void rn_normal_kernel(T* __restrict__ y, int64_t n, uint64_t key, uint64_t counter, compute_t<T> mean,
                                 compute_t<T> stddev) {
  using C = compute_t<T>;
  constexpr int k = rn_per_block<T>();
  const int64_t blocks = (n + k - 1) / k;
  EMBER_CUDA_GRID_STRIDE_LOOP(b, blocks) {
    const uint64_t block_counter = counter + static_cast<uint64_t>(b);
    C z[4] = {};
    rn_normals_of<T>(philox::block(key, block_counter), z);
    const int64_t i0 = b * k;
#pragma unroll
    for (int j = 0; j < k; ++j) {
      if (i0 + j >= n) break;
      C v = z[j];
      if constexpr (Truncated) {
        for (uint64_t r = 1; !(fabs(v) < C(2)); ++r) {
          if (r == kRnMaxTruncatedRounds) {
            v = C(0);
            break;
          }
          C redraw[4] = {};
          rn_normals_of<T>(philox::block(key, block_counter, r), redraw);
          v = redraw[j];
        }
      }
      y[i0 + j] = to_storage<T>(fma_rn(v, stddev, mean));
    }
  }
}

template <class T>
unsigned int rn_grid(int64_t n) {
  constexpr int k = rn_per_block<T>();
  return blocks_for((n + k - 1) / k);
}

#define RN_CASES_FLOAT(...)                          \
  EMBER_CUDA_CASE(F32, float, __VA_ARGS__)           \
  EMBER_CUDA_CASE(F64, double, __VA_ARGS__)          \
  EMBER_CUDA_CASE(F16, __half, __VA_ARGS__)          \
  EMBER_CUDA_CASE(BF16, __nv_bfloat16, __VA_ARGS__)

}  // namespace

bool launch_random_uniform_integer(DT dt, void* y, int64_t n, uint64_t key, uint64_t counter, int64_t lo,
                                   uint64_t range, cudaStream_t stream) {
  switch (dt) {
    EMBER_CUDA_CASE(I32, int32_t, rn_uniform_integer_kernel<<<rn_grid<scalar_t>(n), kThreads, 0, stream>>>(
                                      static_cast<scalar_t*>(y), n, key, counter, lo, range))
    EMBER_CUDA_CASE(I64, int64_t, rn_uniform_integer_kernel<<<rn_grid<scalar_t>(n), kThreads, 0, stream>>>(
                                      static_cast<scalar_t*>(y), n, key, counter, lo, range))
    default: return false;
  }
  return true;
}

bool launch_random_uniform_floating(DT dt, void* y, int64_t n, uint64_t key, uint64_t counter, double lo,
                                    double range, cudaStream_t stream) {
  switch (dt) {
    RN_CASES_FLOAT(using C = compute_t<scalar_t>;
                   rn_uniform_floating_kernel<<<rn_grid<scalar_t>(n), kThreads, 0, stream>>>(
                       static_cast<scalar_t*>(y), n, key, counter, static_cast<C>(lo), static_cast<C>(range)))
    default: return false;
  }
  return true;
}

bool launch_random_normal(DT dt, bool truncated, void* y, int64_t n, uint64_t key, uint64_t counter, double mean,
                          double stddev, cudaStream_t stream) {
  switch (dt) {
    RN_CASES_FLOAT(using C = compute_t<scalar_t>;
                   scalar_t* out = static_cast<scalar_t*>(y);
                   if (truncated) {
                     rn_normal_kernel<scalar_t, true><<<rn_grid<scalar_t>(n), kThreads, 0, stream>>>(
                         out, n, key, counter, static_cast<C>(mean), static_cast<C>(stddev));
                   } else {
                     rn_normal_kernel<scalar_t, false><<<rn_grid<scalar_t>(n), kThreads, 0, stream>>>(
                         out, n, key, counter, static_cast<C>(mean), static_cast<C>(stddev));
                   })
    default: return false;
  }
  return true;
}

}  // namespace ember::cuda
