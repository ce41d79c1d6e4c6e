// 2-D pooling kernels (NHWC) and their gradients, mirroring framework/ops/cpu/pool.cpp element for element:
// the same clipped windows, NaN rule, tie-breaking and summation order. One thread per output (forward,
// argmax) or per input element (gradients, gathered), so no atomics and the results are deterministic.
#include <limits>

#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/cuda/pool_launch.h"

namespace ember::cuda {

namespace {

// The clipped window [b, e) of output position o along one dimension (PoolGeom::window on the CPU).
__device__ __forceinline__ void pool_window(int64_t o, int64_t stride, int64_t pad, int64_t k, int64_t in, int64_t& b,
                                            int64_t& e) {
  b = o * stride - pad;
  e = b + k < in ? b + k : in;
  b = b > 0 ? b : 0;
}

// Output positions [lo, hi) whose (unclipped) window contains input position i.
__device__ __forceinline__ void pool_covering(int64_t i, int64_t s, int64_t pad, int64_t k, int64_t out, int64_t& lo,
                                              int64_t& hi) {
  const int64_t first = i + pad - k + 1;
  lo = first <= 0 ? 0 : (first + s - 1) / s;
  const int64_t last = (i + pad) / s + 1;
  hi = last < out ? last : out;
}

// Splits a flat NHWC index into (n, row, col, channel) for an image of rows x cols pixels.
__device__ __forceinline__ void pool_split(int64_t idx, int64_t rows, int64_t cols, int64_t ch, int64_t& n,
                                           int64_t& r, int64_t& col, int64_t& c) {
  c = idx % ch;
  int64_t t = idx / ch;
  col = t % cols;
  t /= cols;
  r = t % rows;
  n = t / rows;
}

template <class T, bool kMax>
__global__ void pool_forward_kernel(const T* __restrict__ x, T* __restrict__ y, PoolShape g) {
  using C = compute_t<T>;
  const int64_t total = g.n * g.oh * g.ow * g.c;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, total) {
    int64_t n, oh, ow, c, hb, he, wb, we;
    pool_split(idx, g.oh, g.ow, g.c, n, oh, ow, c);
    pool_window(oh, g.sh, g.pt, g.kh, g.h, hb, he);
    pool_window(ow, g.sw, g.pl, g.kw, g.w, wb, we);
    C acc = kMax ? -std::numeric_limits<C>::infinity() : C(0);
    for (int64_t ih = hb; ih < he; ++ih)
      for (int64_t iw = wb; iw < we; ++iw) {
        const C v = load(x, ((n * g.h + ih) * g.w + iw) * g.c + c);
        if constexpr (kMax)
          acc = (v > acc || v != v) ? v : acc;  // NaN propagates, as in TF's max
        else
          acc += v;
      }
    const C scale = kMax ? C(1) : C(1) / static_cast<C>((he - hb) * (we - wb));
    y[idx] = to_storage<T>(kMax ? acc : acc * scale);
  }
}

// Position (row * w + col within the image) of each window's first maximum under a strict >, starting from
// the window's first element: exactly the CPU's choice, NaNs included (a NaN is never greater).
template <class T>
__global__ void max_pool_argmax_kernel(const T* __restrict__ x, int32_t* __restrict__ argmax, PoolShape g) {
  using C = compute_t<T>;
  const int64_t total = g.n * g.oh * g.ow * g.c;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, total) {
    int64_t n, oh, ow, c, hb, he, wb, we;
    pool_split(idx, g.oh, g.ow, g.c, n, oh, ow, c);
    pool_window(oh, g.sh, g.pt, g.kh, g.h, hb, he);
    pool_window(ow, g.sw, g.pl, g.kw, g.w, wb, we);
    const T* xn = x + n * g.h * g.w * g.c + c;
    C best = load(xn, (hb * g.w + wb) * g.c);
    int64_t pos = hb * g.w + wb;
    for (int64_t ih = hb; ih < he; ++ih)
      for (int64_t iw = wb; iw < we; ++iw) {
        const C v = load(xn, (ih * g.w + iw) * g.c);
        if (v > best) {
          best = v;
          pos = ih * g.w + iw;
        }
      }
    argmax[idx] = static_cast<int32_t>(pos);
  }
}

// The CPU adds each window's gradient into dx in (oh, ow) order and rounds to T after every addition; the
// gather visits the windows in the same order and rounds the same way.
template <class T>
__global__ void max_pool_grad_kernel(const int32_t* __restrict__ argmax, const T* __restrict__ dy, T* __restrict__ dx,
                                     PoolShape g) {
  using C = compute_t<T>;
  const int64_t total = g.n * g.h * g.w * g.c;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, total) {
    int64_t n, ih, iw, c, oh_lo, oh_hi, ow_lo, ow_hi;
    pool_split(idx, g.h, g.w, g.c, n, ih, iw, c);
    pool_covering(ih, g.sh, g.pt, g.kh, g.oh, oh_lo, oh_hi);
    pool_covering(iw, g.sw, g.pl, g.kw, g.ow, ow_lo, ow_hi);
    const int32_t self = static_cast<int32_t>(ih * g.w + iw);
    T acc = to_storage<T>(C(0));
    for (int64_t oh = oh_lo; oh < oh_hi; ++oh)
      for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
        const int64_t o = ((n * g.oh + oh) * g.ow + ow) * g.c + c;
        if (argmax[o] == self) acc = to_storage<T>(load(&acc, 0) + load(dy, o));
      }
    dx[idx] = acc;
  }
}

// Every input element sums dy / count over the windows covering it, in the CPU's (oh, ow) order.
template <class T>
__global__ void avg_pool_grad_kernel(const T* __restrict__ dy, T* __restrict__ dx, PoolShape g) {
  using C = compute_t<T>;
  const int64_t total = g.n * g.h * g.w * g.c;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, total) {
    int64_t n, ih, iw, c, oh_lo, oh_hi, ow_lo, ow_hi;
    pool_split(idx, g.h, g.w, g.c, n, ih, iw, c);
    pool_covering(ih, g.sh, g.pt, g.kh, g.oh, oh_lo, oh_hi);
    pool_covering(iw, g.sw, g.pl, g.kw, g.ow, ow_lo, ow_hi);
    C acc = C(0);
    for (int64_t oh = oh_lo; oh < oh_hi; ++oh) {
      int64_t hb, he;
      pool_window(oh, g.sh, g.pt, g.kh, g.h, hb, he);
      for (int64_t ow = ow_lo; ow < ow_hi; ++ow) {
        int64_t wb, we;
        pool_window(ow, g.sw, g.pl, g.kw, g.w, wb, we);
        const C inv = C(1) / static_cast<C>((he - hb) * (we - wb));
        acc += load(dy, ((n * g.oh + oh) * g.ow + ow) * g.c + c) * inv;
      }
    }
    dx[idx] = to_storage<T>(acc);
  }
}

}  // namespace

void launch_pool2d_forward(DT dt, bool is_max, const void* x, void* y, const PoolShape& g, int device, const char* op) {
  const int64_t total = g.n * g.oh * g.ow * g.c;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    if (is_max)
      pool_forward_kernel<scalar_t, true><<<blocks_for(total), kThreads, 0, s>>>(
          static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y), g);
    else
      pool_forward_kernel<scalar_t, false><<<blocks_for(total), kThreads, 0, s>>>(
          static_cast<const scalar_t*>(x), static_cast<scalar_t*>(y), g);
    after_launch(op, device);
  });
}

void launch_max_pool2d_grad(DT dt, const void* x, const void* dy, void* dx, int32_t* argmax, const PoolShape& g,
                            int device, const char* op) {
  const int64_t outs = g.n * g.oh * g.ow * g.c, ins = g.n * g.h * g.w * g.c;
  if (ins == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    if (outs > 0) {
      max_pool_argmax_kernel<scalar_t><<<blocks_for(outs), kThreads, 0, s>>>(static_cast<const scalar_t*>(x), argmax,
                                                                            g);
      after_launch(op, device);
    }
    max_pool_grad_kernel<scalar_t><<<blocks_for(ins), kThreads, 0, s>>>(argmax, static_cast<const scalar_t*>(dy),
                                                                       static_cast<scalar_t*>(dx), g);
    after_launch(op, device);
  });
}

void launch_avg_pool2d_grad(DT dt, const void* dy, void* dx, const PoolShape& g, int device, const char* op) {
  const int64_t ins = g.n * g.h * g.w * g.c;
  if (ins == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    avg_pool_grad_kernel<scalar_t><<<blocks_for(ins), kThreads, 0, s>>>(static_cast<const scalar_t*>(dy),
                                                                       static_cast<scalar_t*>(dx), g);
    after_launch(op, device);
  });
}

}  // namespace ember::cuda
