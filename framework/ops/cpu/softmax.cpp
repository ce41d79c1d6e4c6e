// CPU softmax / log_softmax and the sparse softmax crossentropy: one fused kernel per row (max, sum of
// exponentials, normalise), stable for large logits. Exponentials go through Eigen's vectorised exp; half
// types are widened to float in small chunks.
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "framework/core/parallel.h"
#include "framework/ops/dispatch.h"

namespace ember {

namespace {

template <class C>
using Vec = Eigen::Array<C, Eigen::Dynamic, 1>;
template <class C>
using VecMap = Eigen::Map<Vec<C>>;
template <class C>
using ConstVecMap = Eigen::Map<const Vec<C>>;

// Elements handled at once: the stack buffers that widen half types hold this many.
constexpr int64_t kChunk = 256;
// The widest block of neighbouring rows the strided kernel handles together (stack buffers of this size).
constexpr int64_t kWideChunk = 1024;

// The tensor seen as [outer, n, inner] around the reduced axis.
struct RowGeometry {
  int64_t outer = 1, n = 1, inner = 1;
};

RowGeometry geometry(const Shape& s, int64_t axis) {
  RowGeometry g;
  for (int64_t i = 0; i < axis; ++i) g.outer *= s[i];
  g.n = s[axis];
  for (int64_t i = axis + 1; i < s.rank(); ++i) g.inner *= s[i];
  return g;
}

// src[0, len) in the compute type: the data itself for float/double, a widened copy in buf for half types.
template <class T, class C = compute_t<T>>
const C* widen(const T* src, int64_t len, C* buf) {
  if constexpr (std::is_same_v<T, C>) {
    return src;
  } else {
    for (int64_t j = 0; j < len; ++j) buf[j] = static_cast<C>(src[j]);
    return buf;
  }
}

// Contiguous rows (the reduced axis is the last one): the common case.
template <class T, bool kLog>
void softmax_rows(const T* x, T* y, int64_t rows, int64_t n) {
  using C = compute_t<T>;
  const int64_t grain = grain_for(n);
  parallel_for(rows, grain, [&](int64_t begin, int64_t end) {
    C in[kChunk], ex[kChunk];
    for (int64_t r = begin; r < end; ++r) {
      const T* xr = x + r * n;
      T* yr = y + r * n;
      if constexpr (std::is_same_v<T, C>) {
        ConstVecMap<C> xa(xr, n);
        VecMap<C> ya(yr, n);
        C m = xa.maxCoeff();
        // The exponentials are kept in the output: scaled for softmax, overwritten for log_softmax.
        ya = (xa - m).exp();
        C sum = ya.sum();
        if constexpr (kLog)
          ya = (xa - m) - std::log(sum);  // (x - max) - log(sum), as TF: no rounding at the logits' magnitude
        else
          ya *= C(1) / sum;
      } else {
        C m = -std::numeric_limits<C>::infinity(), sum = 0;
        for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
          int64_t len = std::min(kChunk, n - j0);
          m = std::max(m, ConstVecMap<C>(widen(xr + j0, len, in), len).maxCoeff());
        }
        for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
          int64_t len = std::min(kChunk, n - j0);
          sum += (ConstVecMap<C>(widen(xr + j0, len, in), len) - m).exp().sum();
        }
        C log_sum = std::log(sum), inv = C(1) / sum;
        for (int64_t j0 = 0; j0 < n; j0 += kChunk) {
          int64_t len = std::min(kChunk, n - j0);
          ConstVecMap<C> xa(widen(xr + j0, len, in), len);
          VecMap<C> ea(ex, len);
          if constexpr (kLog)
            ea = (xa - m) - log_sum;
          else
            ea = (xa - m).exp() * inv;
          for (int64_t j = 0; j < len; ++j) yr[j0 + j] = static_cast<T>(ex[j]);
        }
      }
    }
  });
}

// Strided rows (an inner axis): up to kWideChunk neighbouring rows are processed together so every pass streams
// through contiguous memory.
template <class T, bool kLog>
void softmax_strided(const T* x, T* y, const RowGeometry& g) {
  using C = compute_t<T>;
  // Wide blocks stream through memory; split them only as far as needed to give every thread work.
  int64_t want_blocks = std::max<int64_t>(1, (intra_op_threads() + g.outer - 1) / g.outer);
  int64_t width = std::clamp<int64_t>((g.inner + want_blocks - 1) / want_blocks, 1, kWideChunk);
  width = std::min((width + 7) / 8 * 8, kWideChunk);
  int64_t blocks = (g.inner + width - 1) / width;
  const int64_t grain = grain_for(g.n * std::min(g.inner, width));
  parallel_for(g.outer * blocks, grain, [&](int64_t begin, int64_t end) {
    C mbuf[kWideChunk], sbuf[kWideChunk], in[kWideChunk], ex[kWideChunk];
    for (int64_t t = begin; t < end; ++t) {
      int64_t o = t / blocks, i0 = (t % blocks) * width;
      int64_t len = std::min(width, g.inner - i0);
      const T* xb = x + o * g.n * g.inner + i0;
      T* yb = y + o * g.n * g.inner + i0;
      VecMap<C> m(mbuf, len), sum(sbuf, len);
      m.setConstant(-std::numeric_limits<C>::infinity());
      sum.setZero();
      for (int64_t k = 0; k < g.n; ++k) m = m.max(ConstVecMap<C>(widen(xb + k * g.inner, len, in), len));
      constexpr bool kKeepExp = !kLog && std::is_same_v<T, C>;  // reuse the exponentials stored in y
      for (int64_t k = 0; k < g.n; ++k) {
        if constexpr (kKeepExp) {
          VecMap<C> ya(yb + k * g.inner, len);
          ya = (ConstVecMap<C>(xb + k * g.inner, len) - m).exp();
          sum += ya;
        } else {
          sum += (ConstVecMap<C>(widen(xb + k * g.inner, len, in), len) - m).exp();
        }
      }
      if constexpr (kLog)
        sum = sum.log();
      else
        sum = sum.inverse();
      for (int64_t k = 0; k < g.n; ++k) {
        if constexpr (kKeepExp) {
          VecMap<C>(yb + k * g.inner, len) *= sum;
        } else {
          ConstVecMap<C> xa(widen(xb + k * g.inner, len, in), len);
          VecMap<C> ea(ex, len);
          if constexpr (kLog)
            ea = (xa - m) - sum;
          else
            ea = (xa - m).exp() * sum;
          for (int64_t j = 0; j < len; ++j) yb[k * g.inner + j] = static_cast<T>(ex[j]);
        }
      }
    }
  });
}

// One row's TF sparse softmax crossentropy: log(sum(exp(x - max))) - (x[label] - max), the order of TF's
// SparseXentLossGenerator (the same bits as -(log_softmax(x)[label])).
template <class T, class L>
void sparse_xent_rows(const T* x, const L* labels, T* loss, int64_t rows, int64_t n) {
  parallel_for(rows, grain_for(n), [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      ConstVecMap<T> xa(x + r * n, n);
      const T m = xa.maxCoeff();
      const T sum = (xa - m).exp().sum();
      loss[r] = std::log(sum) - (x[r * n + static_cast<int64_t>(labels[r])] - m);
    }
  });
}

// Calls f(x, labels, out, rows, n) with typed pointers: float or double logits and output, int32 or int64
// labels, the logits seen as [rows, n].
template <class F>
void with_xent_types(const KernelContext& ctx, F f) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& labels = ctx.inputs[1];
  const int64_t n = x.shape()[x.rank() - 1], rows = labels.num_elements();
  auto run = [&](auto* xp, auto* out) {
    if (labels.dtype() == DType::Int32)
      f(xp, labels.data<int32_t>(), out, rows, n);
    else
      f(xp, labels.data<int64_t>(), out, rows, n);
  };
  if (x.dtype() == DType::Float32)
    run(x.data<float>(), ctx.outputs[0].data<float>());
  else
    run(x.data<double>(), ctx.outputs[0].data<double>());
}

// The labels are in range: the front end checked them.
void sparse_xent_cpu(const KernelContext& ctx) {
  if (ctx.inputs[1].num_elements() == 0) return;
  with_xent_types(ctx, [](const auto* x, const auto* labels, auto* loss, int64_t rows, int64_t n) {
    sparse_xent_rows(x, labels, loss, rows, n);
  });
}

// softmax(x) - one_hot(labels) over the last axis: softmax_rows' values, then 1 off at each row's label
// (none for a label out of range, as one_hot's zero row).
void sparse_xent_backprop_cpu(const KernelContext& ctx) {
  if (ctx.inputs[0].num_elements() == 0) return;
  with_xent_types(ctx, [](const auto* x, const auto* labels, auto* y, int64_t rows, int64_t n) {
    softmax_rows<std::remove_const_t<std::remove_pointer_t<decltype(x)>>, false>(x, y, rows, n);
    for (int64_t r = 0; r < rows; ++r)
      if (labels[r] >= 0 && labels[r] < n) y[r * n + static_cast<int64_t>(labels[r])] -= 1;
  });
}

template <bool kLog>
void softmax_cpu(const KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  if (x.num_elements() == 0) return;
  RowGeometry g = geometry(x.shape(), std::get<AxisAttrs>(ctx.attrs).axis);
  EMBER_DISPATCH_FLOAT(x.dtype(), op_name(ctx.op), {
    const scalar_t* xp = static_cast<const scalar_t*>(x.raw_data());
    scalar_t* yp = static_cast<scalar_t*>(y.raw_data());
    if (g.inner == 1)
      softmax_rows<scalar_t, kLog>(xp, yp, g.outer, g.n);
    else
      softmax_strided<scalar_t, kLog>(xp, yp, g);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(softmax, CPU, softmax_cpu<false>, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(log_softmax, CPU, softmax_cpu<true>, DType::Float32, DType::Float64, DType::Float16,
                      DType::BFloat16);
EMBER_REGISTER_KERNEL(sparse_softmax_cross_entropy_with_logits, CPU, sparse_xent_cpu, DType::Float32, DType::Float64);
EMBER_REGISTER_KERNEL(sparse_softmax_cross_entropy_backprop, CPU, sparse_xent_backprop_cpu, DType::Float32,
                      DType::Float64);

}  // namespace ember
