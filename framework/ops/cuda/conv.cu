// Convolution helpers: layout moves around cuDNN and direct kernels (see conv_launch.h). The direct kernels
// gather, one thread per output element (the filter gradient: one block per filter element with a fixed
// tree reduction), so no atomics and the results are deterministic.
#include "framework/ops/cuda/conv_launch.h"
#include "framework/ops/cuda/cuda_runtime.h"
#include "framework/ops/cuda/cuda_types.cuh"
#include "framework/ops/functors.h"

namespace ember::cuda {

namespace {

template <class E>
__global__ void conv_transpose2d_kernel(const E* __restrict__ in, E* __restrict__ out, int64_t rows, int64_t cols) {
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, rows * cols) {
    const int64_t c = idx / rows, r = idx % rows;
    out[idx] = in[r * cols + c];
  }
}

template <class E>
__global__ void conv_pad_kernel(const E* __restrict__ x, E* __restrict__ xp, int64_t n, int64_t h, int64_t w,
                                int64_t c, int64_t hp, int64_t wp, int64_t top, int64_t left) {
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, n * hp * wp * c) {
    const int64_t ch = idx % c;
    int64_t t = idx / c;
    const int64_t iw = t % wp - left;
    t /= wp;
    const int64_t ih = t % hp - top, b = t / hp;
    xp[idx] = (ih >= 0 && ih < h && iw >= 0 && iw < w) ? x[((b * h + ih) * w + iw) * c + ch] : E(0);
  }
}

template <class E>
__global__ void conv_crop_kernel(const E* __restrict__ xp, E* __restrict__ x, int64_t n, int64_t h, int64_t w,
                                 int64_t c, int64_t hp, int64_t wp, int64_t top, int64_t left) {
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, n * h * w * c) {
    const int64_t ch = idx % c;
    int64_t t = idx / c;
    const int64_t iw = t % w;
    t /= w;
    const int64_t ih = t % h, b = t / h;
    x[idx] = xp[((b * hp + ih + top) * wp + iw + left) * c + ch];
  }
}

// Runs `body` with E bound to an unsigned type of elem_bytes bytes (the moves only copy bits).
template <class Body>
void conv_by_size(int elem_bytes, Body&& body) {
  switch (elem_bytes) {
    case 2: body(uint16_t{}); break;
    case 4: body(uint32_t{}); break;
    case 8: body(uint64_t{}); break;
    default: break;
  }
}

// The sum is rounded into T before the relu, as the CPU's separate pass sees it.
template <class T>
__global__ void bias_add_kernel(T* __restrict__ y, const T* __restrict__ bias, int64_t total, int64_t channels,
                                     bool relu) {
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, total) {
    y[idx] = to_storage<T>(load(y, idx) + load(bias, idx % channels));
    if (relu) y[idx] = to_storage<T>(functors::Relu{}(load(y, idx)));
  }
}

template <class T>
__global__ void conv_direct_forward_kernel(const T* __restrict__ x, const T* __restrict__ w, T* __restrict__ y,
                                           ConvShape g) {
  using C = compute_t<T>;
  const int64_t ig = g.c / g.groups, og = g.o / g.groups;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, g.n * g.oh * g.ow * g.o) {
    const int64_t o = idx % g.o;
    int64_t t = idx / g.o;
    const int64_t ow = t % g.ow;
    t /= g.ow;
    const int64_t oh = t % g.oh, n = t / g.oh, gr = o / og;
    C acc = C(0);
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t ih = oh * g.sh - g.pt + kh * g.dh;
      if (ih < 0 || ih >= g.h) continue;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t iw = ow * g.sw - g.pl + kw * g.dw;
        if (iw < 0 || iw >= g.w) continue;
        const T* xp = x + ((n * g.h + ih) * g.w + iw) * g.c + gr * ig;
        const T* wp = w + (kh * g.kw + kw) * ig * g.o + o;
        for (int64_t i = 0; i < ig; ++i) acc += load(xp, i) * load(wp, i * g.o);
      }
    }
    y[idx] = to_storage<T>(acc);
  }
}

// The output position along one axis that input position i meets through filter tap k, or -1 if none.
__device__ __forceinline__ int64_t conv_tap_to_output(int64_t i, int64_t k, int64_t stride, int64_t dilation,
                                                      int64_t pad, int64_t out) {
  const int64_t num = i + pad - k * dilation;
  if (num < 0 || num % stride != 0) return -1;
  const int64_t o = num / stride;
  return o < out ? o : -1;
}

template <class T>
__global__ void conv_direct_backprop_input_kernel(const T* __restrict__ w, const T* __restrict__ dy,
                                                  T* __restrict__ dx, ConvShape g) {
  using C = compute_t<T>;
  const int64_t ig = g.c / g.groups, og = g.o / g.groups;
  EMBER_CUDA_GRID_STRIDE_LOOP(idx, g.n * g.h * g.w * g.c) {
    const int64_t ch = idx % g.c;
    int64_t t = idx / g.c;
    const int64_t iw = t % g.w;
    t /= g.w;
    const int64_t ih = t % g.h, n = t / g.h, gr = ch / ig, i = ch % ig;
    C acc = C(0);
    for (int64_t kh = 0; kh < g.kh; ++kh) {
      const int64_t oh = conv_tap_to_output(ih, kh, g.sh, g.dh, g.pt, g.oh);
      if (oh < 0) continue;
      for (int64_t kw = 0; kw < g.kw; ++kw) {
        const int64_t ow = conv_tap_to_output(iw, kw, g.sw, g.dw, g.pl, g.ow);
        if (ow < 0) continue;
        const T* dyp = dy + ((n * g.oh + oh) * g.ow + ow) * g.o + gr * og;
        const T* wp = w + ((kh * g.kw + kw) * ig + i) * g.o + gr * og;
        C s = C(0);
        for (int64_t k = 0; k < og; ++k) s += load(dyp, k) * load(wp, k);
        acc += s;
      }
    }
    dx[idx] = to_storage<T>(acc);
  }
}

template <class T>
__global__ void conv_direct_backprop_filter_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                                   T* __restrict__ dw, ConvShape g) {
  using C = compute_t<T>;
  __shared__ C partial[kThreads];
  const int64_t ig = g.c / g.groups, og = g.o / g.groups;
  const int64_t filters = g.kh * g.kw * ig * g.o, spatial = g.n * g.oh * g.ow;
  // Block-uniform loop over filter elements (HWIO order), so every thread reaches each __syncthreads.
  for (int64_t f = blockIdx.x; f < filters; f += gridDim.x) {
    const int64_t o = f % g.o;
    int64_t t = f / g.o;
    const int64_t i = t % ig;
    t /= ig;
    const int64_t kw = t % g.kw, kh = t / g.kw, gr = o / og;
    C acc = C(0);
    for (int64_t s = threadIdx.x; s < spatial; s += blockDim.x) {
      const int64_t ow = s % g.ow, oh = (s / g.ow) % g.oh, n = s / (g.ow * g.oh);
      const int64_t ih = oh * g.sh - g.pt + kh * g.dh, iw = ow * g.sw - g.pl + kw * g.dw;
      if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
      acc += load(x, ((n * g.h + ih) * g.w + iw) * g.c + gr * ig + i) * load(dy, s * g.o + o);
    }
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int half = kThreads / 2; half > 0; half >>= 1) {
      if (static_cast<int>(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0) dw[f] = to_storage<T>(partial[0]);
    __syncthreads();  // partial is reused by the next filter element
  }
}

#undef EMBER_CONV_GRID_STRIDE

}  // namespace

void launch_conv_transpose2d(const void* in, void* out, int64_t rows, int64_t cols, int elem_bytes, int device,
                             const char* op) {
  const int64_t total = rows * cols;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  conv_by_size(elem_bytes, [&](auto tag) {
    using E = decltype(tag);
    conv_transpose2d_kernel<E><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const E*>(in), static_cast<E*>(out),
                                                                      rows, cols);
    after_launch(op, device);
  });
}

void launch_conv_pad_nhwc(const void* x, void* xp, int64_t n, int64_t h, int64_t w, int64_t c, int64_t hp, int64_t wp,
                          int64_t top, int64_t left, int elem_bytes, int device, const char* op) {
  const int64_t total = n * hp * wp * c;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  conv_by_size(elem_bytes, [&](auto tag) {
    using E = decltype(tag);
    conv_pad_kernel<E><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const E*>(x), static_cast<E*>(xp), n, h, w, c,
                                                              hp, wp, top, left);
    after_launch(op, device);
  });
}

void launch_conv_crop_nhwc(const void* xp, void* x, int64_t n, int64_t h, int64_t w, int64_t c, int64_t hp, int64_t wp,
                           int64_t top, int64_t left, int elem_bytes, int device, const char* op) {
  const int64_t total = n * h * w * c;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  conv_by_size(elem_bytes, [&](auto tag) {
    using E = decltype(tag);
    conv_crop_kernel<E><<<blocks_for(total), kThreads, 0, s>>>(static_cast<const E*>(xp), static_cast<E*>(x), n, h, w,
                                                               c, hp, wp, top, left);
    after_launch(op, device);
  });
}

void launch_bias_add(DT dt, void* y, const void* bias, int64_t total, int64_t channels, bool relu, int device,
                          const char* op) {
  if (total == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    bias_add_kernel<scalar_t><<<blocks_for(total), kThreads, 0, s>>>(
        static_cast<scalar_t*>(y), static_cast<const scalar_t*>(bias), total, channels, relu);
    after_launch(op, device);
  });
}

void launch_conv2d_direct(DT dt, const void* x, const void* w, void* y, const ConvShape& g, int device,
                          const char* op) {
  const int64_t total = g.n * g.oh * g.ow * g.o;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    conv_direct_forward_kernel<scalar_t><<<blocks_for(total), kThreads, 0, s>>>(
        static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(w), static_cast<scalar_t*>(y), g);
    after_launch(op, device);
  });
}

void launch_conv2d_backprop_input_direct(DT dt, const void* w, const void* dy, void* dx, const ConvShape& g, int device,
                                         const char* op) {
  const int64_t total = g.n * g.h * g.w * g.c;
  if (total == 0) return;
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    conv_direct_backprop_input_kernel<scalar_t><<<blocks_for(total), kThreads, 0, s>>>(
        static_cast<const scalar_t*>(w), static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dx), g);
    after_launch(op, device);
  });
}

void launch_conv2d_backprop_filter_direct(DT dt, const void* x, const void* dy, void* dw, const ConvShape& g,
                                          int device, const char* op) {
  const int64_t filters = g.kh * g.kw * (g.c / g.groups) * g.o;
  if (filters == 0) return;
  const unsigned int grid = static_cast<unsigned int>(filters < (1 << 20) ? filters : (1 << 20));
  cudaStream_t s = stream(device);
  EMBER_CUDA_DISPATCH_FLOATING(dt, {
    conv_direct_backprop_filter_kernel<scalar_t><<<grid, kThreads, 0, s>>>(
        static_cast<const scalar_t*>(x), static_cast<const scalar_t*>(dy), static_cast<scalar_t*>(dw), g);
    after_launch(op, device);
  });
}

}  // namespace ember::cuda
