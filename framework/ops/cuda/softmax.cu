// CUDA softmax / log_softmax (and the sparse softmax crossentropy, float32/float64), computed in float for
// the half types. Contiguous rows (the axis is the last one) get a warp each when short and a block each
// when long: max, sum of exponentials, then the normalised values, each an all-reduce through warp shuffles.
// An inner axis gets a thread per column, so neighbouring threads read neighbouring elements. The formulas
// are cpu/softmax.cpp's: exp(x - max) * (1 / sum) and (x - max) - log(sum).
#include <cmath>
#include <limits>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/softmax_launch.h"

namespace ember::cuda {
namespace {

__device__ __forceinline__ float softmax_exp(float v) { return expf(v); }
__device__ __forceinline__ double softmax_exp(double v) { return exp(v); }
__device__ __forceinline__ float softmax_log(float v) { return logf(v); }
__device__ __forceinline__ double softmax_log(double v) { return log(v); }

// A NaN never wins the max; it still reaches every output through the sum of exponentials.
struct SoftmaxMax {
  template <class C>
  __device__ C operator()(C a, C b) const { return b > a ? b : a; }
};
struct SoftmaxAdd {
  template <class C>
  __device__ C operator()(C a, C b) const { return a + b; }
};

// Every lane of the warp gets the result.
template <class C, class F>
__device__ __forceinline__ C softmax_warp_allreduce(C v, F f) {
  for (int d = 16; d > 0; d >>= 1) v = f(v, __shfl_xor_sync(0xffffffffu, v, d));
  return v;
}

// Every thread of the block gets the result; every thread of the block must call it.
template <class C, class F>
__device__ C softmax_block_allreduce(C v, F f, C identity, C* smem) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = (blockDim.x + 31) / 32;
  v = softmax_warp_allreduce(v, f);
  __syncthreads();  // smem may still be read by the previous all-reduce
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = lane < warps ? smem[lane] : identity;
  return softmax_warp_allreduce(v, f);
}

template <class T, bool kLog, bool kWarp>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  __shared__ C smem[32];
  const int lanes = kWarp ? 32 : static_cast<int>(blockDim.x);
  const int lane = kWarp ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x);
  const int64_t per_block = kWarp ? blockDim.x / 32 : 1;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * per_block + (kWarp ? threadIdx.x / 32 : 0);
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  const C neg_inf = -std::numeric_limits<C>::infinity();
  auto all = [&](C v, auto f, C identity) {
    if constexpr (kWarp) {
      return softmax_warp_allreduce(v, f);
    } else {
      return softmax_block_allreduce(v, f, identity, smem);
    }
  };
  for (int64_t row = first; row < rows; row += step) {
    const T* xr = x + row * n;
    T* yr = y + row * n;
    C m = neg_inf;
    for (int64_t j = lane; j < n; j += lanes) {
      const C v = load(xr, j);
      m = v > m ? v : m;
    }
    m = all(m, SoftmaxMax{}, neg_inf);
    C sum = 0;
    for (int64_t j = lane; j < n; j += lanes) sum += softmax_exp(load(xr, j) - m);
    sum = all(sum, SoftmaxAdd{}, C(0));
    if constexpr (kLog) {
      const C log_sum = softmax_log(sum);
      for (int64_t j = lane; j < n; j += lanes) yr[j] = to_storage<T>((load(xr, j) - m) - log_sum);
    } else {
      const C inv = C(1) / sum;
      for (int64_t j = lane; j < n; j += lanes) yr[j] = to_storage<T>(softmax_exp(load(xr, j) - m) * inv);
    }
  }
}

template <class T, bool kLog>
__global__ void softmax_strided_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  using C = compute_t<T>;
  EMBER_CUDA_GRID_STRIDE_LOOP(t, outer * inner) {
    const int64_t o = t / inner, i = t % inner;
    const T* xb = x + o * n * inner + i;
    T* yb = y + o * n * inner + i;
    C m = -std::numeric_limits<C>::infinity();
    for (int64_t k = 0; k < n; ++k) {
      const C v = load(xb, k * inner);
      m = v > m ? v : m;
    }
    C sum = 0;
    for (int64_t k = 0; k < n; ++k) sum += softmax_exp(load(xb, k * inner) - m);
    if constexpr (kLog) {
      const C log_sum = softmax_log(sum);
      for (int64_t k = 0; k < n; ++k) yb[k * inner] = to_storage<T>((load(xb, k * inner) - m) - log_sum);
    } else {
      const C inv = C(1) / sum;
      for (int64_t k = 0; k < n; ++k) yb[k * inner] = to_storage<T>(softmax_exp(load(xb, k * inner) - m) * inv);
    }
  }
}

template <class T, bool kLog>
void softmax_run(const void* xv, void* yv, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  const T* x = static_cast<const T*>(xv);
  T* y = static_cast<T*>(yv);
  if (inner == 1) {
    if (n <= 1024) {
      softmax_rows_kernel<T, kLog, true><<<blocks_for(outer * 32), kThreads, 0, stream>>>(x, y, outer, n);
    } else {
      softmax_rows_kernel<T, kLog, false><<<blocks_for(outer, 1), kThreads, 0, stream>>>(x, y, outer, n);
    }
  } else {
    softmax_strided_kernel<T, kLog><<<blocks_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, n, inner);
  }
}

// One warp per row: TF's sparse softmax crossentropy, log(sum(exp(x - max))) - (x[label] - max).
template <class T, class L>
__global__ void sparse_xent_kernel(const T* x, const L* labels, T* loss, int64_t rows, int64_t n) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t per_block = blockDim.x / 32;
  const int64_t step = static_cast<int64_t>(gridDim.x) * per_block;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * per_block + threadIdx.x / 32; row < rows; row += step) {
    const T* xr = x + row * n;
    T m = -std::numeric_limits<T>::infinity();
    for (int64_t j = lane; j < n; j += 32) m = xr[j] > m ? xr[j] : m;
    m = softmax_warp_allreduce(m, SoftmaxMax{});
    T sum = 0;
    for (int64_t j = lane; j < n; j += 32) sum += softmax_exp(xr[j] - m);
    sum = softmax_warp_allreduce(sum, SoftmaxAdd{});
    // A label outside [0, n) (reported by the device check at the next host read) gives NaN, as in TF.
    const int64_t label = static_cast<int64_t>(labels[row]);
    if (lane == 0)
      loss[row] = label >= 0 && label < n ? softmax_log(sum) - (xr[label] - m) : std::numeric_limits<T>::quiet_NaN();
  }
}

// One thread per row: y[r][labels[r]] -= 1.
template <class T, class L>
__global__ void subtract_one_at_labels_kernel(T* y, const L* labels, int64_t rows, int64_t n) {
  EMBER_CUDA_GRID_STRIDE_LOOP(r, rows) {
    const L label = labels[r];
    if (label >= 0 && label < n) y[r * n + static_cast<int64_t>(label)] -= T(1);
  }
}

template <class T>
void subtract_one_at_labels(bool labels64, void* y, const void* labels, int64_t rows, int64_t n, cudaStream_t stream) {
  T* yp = static_cast<T*>(y);
  if (labels64)
    subtract_one_at_labels_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(yp, static_cast<const int64_t*>(labels), rows, n);
  else
    subtract_one_at_labels_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(yp, static_cast<const int32_t*>(labels), rows, n);
}

template <class T>
void sparse_xent_run(bool labels64, const void* x, const void* labels, void* loss, int64_t rows, int64_t n,
                     cudaStream_t stream) {
  const T* xp = static_cast<const T*>(x);
  T* lp = static_cast<T*>(loss);
  if (labels64)
    sparse_xent_kernel<<<blocks_for(rows * 32), kThreads, 0, stream>>>(xp, static_cast<const int64_t*>(labels), lp, rows, n);
  else
    sparse_xent_kernel<<<blocks_for(rows * 32), kThreads, 0, stream>>>(xp, static_cast<const int32_t*>(labels), lp, rows, n);
}

}  // namespace

void sparse_xent_launch(DT dt, bool labels64, const void* x, const void* labels, void* loss, int64_t rows, int64_t n,
                        int device, cudaStream_t stream, const char* op) {
  if (rows == 0) return;
  if (dt == DT::F64)
    sparse_xent_run<double>(labels64, x, labels, loss, rows, n, stream);
  else
    sparse_xent_run<float>(labels64, x, labels, loss, rows, n, stream);
  after_launch(op, device);
}

void sparse_xent_backprop_launch(DT dt, bool labels64, const void* x, const void* labels, void* y, int64_t rows,
                                 int64_t n, int device, cudaStream_t stream, const char* op) {
  if (rows * n == 0) return;
  softmax_launch(false, dt, x, y, rows, n, 1, device, stream, op);
  if (dt == DT::F64)
    subtract_one_at_labels<double>(labels64, y, labels, rows, n, stream);
  else
    subtract_one_at_labels<float>(labels64, y, labels, rows, n, stream);
  after_launch(op, device);
}

void softmax_launch(bool log, DT dt, const void* x, void* y, int64_t outer, int64_t n, int64_t inner, int device,
                    cudaStream_t stream, const char* op) {
  if (outer * n * inner == 0) return;
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    if (log) {
      softmax_run<scalar_t, true>(x, y, outer, n, inner, stream);
    } else {
      softmax_run<scalar_t, false>(x, y, outer, n, inner, stream);
    }
  });
  after_launch(op, device);
}

}  // namespace ember::cuda
