#pragma once
// Internal: the CPU loops behind every elementwise kernel. Contiguous inputs (the common case) run
// as flat loops the compiler vectorises; broadcasting goes through a plan that first collapses
// dimensions so the innermost loop is as long as possible.
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "framework/core/dtype.h"
#include "framework/core/parallel.h"
#include "framework/core/tensor.h"
#include "framework/ops/broadcast.h"
#include "framework/ops/cpu/half_convert.h"

namespace ember::cpu {

// Wraps a compute-type functor so it reads and writes storage types (half <-> float around the math). The
// operands are taken by reference and converted with half_convert.h's element conversions, so the loops over
// half types vectorise as the float32 ones do.
template <class T, class Out, class F>
struct Unary {
  F f;
  Out operator()(const T& x) const { return from_compute<Out>(f(to_compute(x))); }
};
template <class T, class Out, class F>
struct Binary {
  F f;
  Out operator()(const T& a, const T& b) const { return from_compute<Out>(f(to_compute(a), to_compute(b))); }
};

// Runs body(begin, end) over [0, n): on the calling thread when small, else on the shared pool.
template <class Body>
inline void run_range(int64_t n, int64_t grain, Body&& body) {
  if (n <= grain) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  parallel_for(n, grain, body);
}

// y[i] = f(x[i]) for i in [b, e): out of line, since inlined into the parallel region's body GCC 12 left the loop of
// a larger functor scalar (softplus's exp, log1p and selects: 11.7 ns an element over 2 threads instead of 0.6).
template <class In, class Out, class F>
__attribute__((noinline)) void unary_span(const In* x, Out* y, int64_t b, int64_t e, F f) {
  for (int64_t i = b; i < e; ++i) y[i] = f(x[i]);
}

// y[i] = f(x[i]) over n contiguous elements.
template <class In, class Out, class F>
void unary_loop(const In* x, Out* y, int64_t n, F f) {
  run_range(n, kParallelGrain, [=](int64_t b, int64_t e) { unary_span(x, y, b, e, f); });
}

// Float16 operands: an element conversion keeps a loop scalar (Eigen's half converts one value at a time), so the
// loops below convert blocks of kHalfBlock elements with F16C (to_compute_n / from_compute_n), run the functor on
// float32 and round the block back: the values of the element-wise loops, since both conversions are static_cast's.
template <class T, class Out>
concept HalfOperands = std::is_same_v<T, half> || std::is_same_v<Out, half>;
inline constexpr int64_t kHalfBlock = 256;

// dst[j] = src[j * stride] in T's compute type, j < k.
template <class T>
inline void load_block(const T* src, int64_t stride, compute_t<T>* dst, int64_t k) {
  if (stride == 1) {
    to_compute_n(src, dst, k);
  } else if (stride == 0) {
    std::fill_n(dst, k, to_compute(src[0]));
  } else {
    for (int64_t j = 0; j < k; ++j) dst[j] = to_compute(src[j * stride]);
  }
}

template <class T, class Out, class F>
  requires HalfOperands<T, Out>
void unary_loop(const T* x, Out* y, int64_t n, Unary<T, Out, F> u) {
  using R = decltype(u.f(compute_t<T>{}));
  run_range(n, kParallelGrain, [=](int64_t b, int64_t e) {
    compute_t<T> xs[kHalfBlock];
    R ys[kHalfBlock];
    for (int64_t i = b; i < e; i += kHalfBlock) {
      const int64_t k = std::min(kHalfBlock, e - i);
      to_compute_n(x + i, xs, k);
      for (int64_t j = 0; j < k; ++j) ys[j] = u.f(xs[j]);
      from_compute_n(ys, y + i, k);
    }
  });
}

// z[j] = f(x[j * sx], y[j * sy]) for j < n, in blocks (see HalfOperands).
template <class T, class Out, class F>
void binary_blocks(const T* x, int64_t sx, const T* y, int64_t sy, Out* z, int64_t n, const Binary<T, Out, F>& f) {
  using C = compute_t<T>;
  using R = decltype(f.f(C{}, C{}));
  C xs[kHalfBlock], ys[kHalfBlock];
  R zs[kHalfBlock];
  for (int64_t i = 0; i < n; i += kHalfBlock) {
    const int64_t k = std::min(kHalfBlock, n - i);
    load_block(x + i * sx, sx, xs, k);
    load_block(y + i * sy, sy, ys, k);
    for (int64_t j = 0; j < k; ++j) zs[j] = f.f(xs[j], ys[j]);
    from_compute_n(zs, z + i, k);
  }
}

// Calls row(out_offset, in_offsets) for each run of the inner dimension of the plan, rows in parallel.
template <size_t N, class Row>
void for_each_row(const BroadcastPlan<N>& p, int64_t num_elements, Row&& row) {
  const int64_t inner = p.inner();
  const int64_t outer_rank = p.rank() - 1;
  const int64_t rows = inner ? num_elements / inner : 0;
  const int64_t grain = grain_for(inner);
  run_range(rows, grain, [&](int64_t rb, int64_t re) {
    constexpr int64_t kMaxCounters = 16;
    int64_t idx[kMaxCounters];
    std::array<int64_t, N> off{};
    // Start: the multi-index of row rb (division once per chunk), then step with carries.
    int64_t r = rb;
    for (int64_t d = outer_rank - 1; d >= 0; --d) {
      int64_t i = r % p.dims[static_cast<size_t>(d)];
      r /= p.dims[static_cast<size_t>(d)];
      if (d < kMaxCounters) idx[d] = i;
      for (size_t k = 0; k < N; ++k) off[k] += i * p.strides[static_cast<size_t>(d)][k];
    }
    for (int64_t row_i = rb; row_i < re; ++row_i) {
      if (outer_rank > kMaxCounters) {  // rank too high for the counters: recompute by division
        r = row_i;
        off = {};
        for (int64_t d = outer_rank - 1; d >= 0; --d) {
          int64_t i = r % p.dims[static_cast<size_t>(d)];
          r /= p.dims[static_cast<size_t>(d)];
          for (size_t k = 0; k < N; ++k) off[k] += i * p.strides[static_cast<size_t>(d)][k];
        }
        row(row_i * inner, off);
        continue;
      }
      row(row_i * inner, off);
      for (int64_t d = outer_rank - 1; d >= 0; --d) {
        const auto& st = p.strides[static_cast<size_t>(d)];
        if (++idx[d] < p.dims[static_cast<size_t>(d)]) {
          for (size_t k = 0; k < N; ++k) off[k] += st[k];
          break;
        }
        idx[d] = 0;
        for (size_t k = 0; k < N; ++k) off[k] -= (p.dims[static_cast<size_t>(d)] - 1) * st[k];
      }
    }
  });
}

// z = f(x, y) with NumPy broadcasting; out's shape is the broadcast of a's and b's.
template <class T, class Out, class F>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* x = static_cast<const T*>(a.raw_data());
  const T* y = static_cast<const T*>(b.raw_data());
  Out* z = static_cast<Out*>(out.raw_data());
  const int64_t n = out.num_elements();
  if (n == 0) return;
  const int64_t na = a.num_elements(), nb = b.num_elements();
  if (na == n && nb == n) {
    run_range(n, kParallelGrain, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) z[i] = f(x[i], y[i]);
    });
  } else if (na == 1) {
    const T v = x[0];
    run_range(n, kParallelGrain, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) z[i] = f(v, y[i]);
    });
  } else if (nb == 1) {
    const T v = y[0];
    run_range(n, kParallelGrain, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) z[i] = f(x[i], v);
    });
  } else {
    BroadcastPlan<2> p(out.shape(), {&a.shape(), &b.shape()});
    const int64_t inner = p.inner();
    const int64_t sx = p.strides.back()[0], sy = p.strides.back()[1];
    for_each_row(p, n, [=](int64_t o, const std::array<int64_t, 2>& off) {
      const T* xr = x + off[0];
      const T* yr = y + off[1];
      Out* zr = z + o;
      if (sx == 1 && sy == 1) {
        for (int64_t j = 0; j < inner; ++j) zr[j] = f(xr[j], yr[j]);
      } else if (sx == 0 && sy == 1) {
        const T v = xr[0];
        for (int64_t j = 0; j < inner; ++j) zr[j] = f(v, yr[j]);
      } else if (sx == 1 && sy == 0) {
        const T v = yr[0];
        for (int64_t j = 0; j < inner; ++j) zr[j] = f(xr[j], v);
      } else {
        for (int64_t j = 0; j < inner; ++j) zr[j] = f(xr[j * sx], yr[j * sy]);
      }
    });
  }
}

template <class T, class Out, class F>
  requires HalfOperands<T, Out>
void binary_loop(const Tensor& a, const Tensor& b, Tensor& out, Binary<T, Out, F> f) {
  const T* x = static_cast<const T*>(a.raw_data());
  const T* y = static_cast<const T*>(b.raw_data());
  Out* z = static_cast<Out*>(out.raw_data());
  const int64_t n = out.num_elements();
  if (n == 0) return;
  const int64_t na = a.num_elements(), nb = b.num_elements();
  if ((na == n || na == 1) && (nb == n || nb == 1)) {
    const int64_t sx = na == n ? 1 : 0, sy = nb == n ? 1 : 0;
    run_range(n, kParallelGrain,
              [=](int64_t s, int64_t e) { binary_blocks(x + s * sx, sx, y + s * sy, sy, z + s, e - s, f); });
    return;
  }
  BroadcastPlan<2> p(out.shape(), {&a.shape(), &b.shape()});
  const int64_t inner = p.inner();
  const int64_t sx = p.strides.back()[0], sy = p.strides.back()[1];
  for_each_row(p, n, [=](int64_t o, const std::array<int64_t, 2>& off) {
    binary_blocks(x + off[0], sx, y + off[1], sy, z + o, inner, f);
  });
}

// out = f(a, b, c) with all three broadcast to out's shape (where, clip_by_value).
template <class A, class B, class C, class Out, class F>
void ternary_loop(const Tensor& a, const Tensor& b, const Tensor& c, Tensor& out, F f) {
  const A* pa = static_cast<const A*>(a.raw_data());
  const B* pb = static_cast<const B*>(b.raw_data());
  const C* pc = static_cast<const C*>(c.raw_data());
  Out* z = static_cast<Out*>(out.raw_data());
  const int64_t n = out.num_elements();
  if (n == 0) return;
  if (a.num_elements() == n && b.num_elements() == n && c.num_elements() == n) {
    run_range(n, kParallelGrain, [=](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) z[i] = f(pa[i], pb[i], pc[i]);
    });
    return;
  }
  BroadcastPlan<3> p(out.shape(), {&a.shape(), &b.shape(), &c.shape()});
  const int64_t inner = p.inner();
  const std::array<int64_t, 3> st = p.strides.back();
  for_each_row(p, n, [=](int64_t o, const std::array<int64_t, 3>& off) {
    const A* ar = pa + off[0];
    const B* br = pb + off[1];
    const C* cr = pc + off[2];
    Out* zr = z + o;
    for (int64_t j = 0; j < inner; ++j) zr[j] = f(ar[j * st[0]], br[j * st[1]], cr[j * st[2]]);
  });
}

}  // namespace ember::cpu
