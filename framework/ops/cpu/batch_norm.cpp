// CPU fused batch norm and its backward over the rows of x seen as (m, c), c its last dimension: sums per channel
// in double, two passes (the mean, then the squared deviations from it), the statistics and the output rounded
// once to their dtypes. BatchNormalization composes its CPU ops instead (ops::fused_batch_norm_applies); these
// kernels serve direct calls, the tests and graphs traced for a GPU replayed elsewhere.
#include <cmath>
#include <vector>

#include "framework/ops/dispatch.h"

namespace ember {

namespace {

template <class T>
double bn_widen(T v) {
  return static_cast<double>(static_cast<compute_t<T>>(v));
}
template <class T>
T bn_narrow(double v) {
  return static_cast<T>(static_cast<compute_t<T>>(v));
}

struct BnRows {
  int64_t m, c;
};
BnRows bn_rows_of(const Tensor& x) {
  const int64_t c = x.shape()[x.rank() - 1];
  return {c > 0 ? x.num_elements() / c : 0, c};
}

// S: the statistics' type (float, double for float64 x).
template <class T, class S>
void bn_forward(const KernelContext& ctx) {
  const auto& a = std::get<BatchNormAttrs>(ctx.attrs);
  const auto [m, c] = bn_rows_of(ctx.inputs[0]);
  const T* x = ctx.inputs[0].data<T>();
  const S* scale = ctx.inputs[1].data<S>();
  const S* offset = ctx.inputs[2].data<S>();
  const T* side = a.ops == BatchNormOps::BnAddRelu ? ctx.inputs[3].data<T>() : nullptr;
  std::vector<double> mean(static_cast<size_t>(c), 0.0), var(static_cast<size_t>(c), 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < c; ++j) mean[j] += bn_widen(x[r * c + j]);
  for (double& v : mean) v /= static_cast<double>(m);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < c; ++j) {
      const double d = bn_widen(x[r * c + j]) - mean[j];
      var[j] += d * d;
    }
  S* mean_out = ctx.outputs[1].data<S>();
  S* var_out = ctx.outputs[2].data<S>();
  S* inv_out = ctx.outputs[3].data<S>();
  std::vector<double> mul(static_cast<size_t>(c)), add(static_cast<size_t>(c));
  for (int64_t j = 0; j < c; ++j) {
    var[j] /= static_cast<double>(m);
    const double inv = 1.0 / std::sqrt(var[j] + a.epsilon);
    mean_out[j] = static_cast<S>(mean[j]);
    var_out[j] = static_cast<S>(var[j]);
    inv_out[j] = static_cast<S>(inv);
    mul[j] = inv * static_cast<double>(scale[j]);
    add[j] = static_cast<double>(offset[j]) - mean[j] * mul[j];
  }
  T* y = ctx.outputs[0].data<T>();
  const bool relu = a.ops != BatchNormOps::Bn;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < c; ++j) {
      const int64_t i = r * c + j;
      double v = bn_widen(x[i]) * mul[j] + add[j];
      if (side) v += bn_widen(side[i]);
      y[i] = bn_narrow<T>(relu && v < 0 ? 0.0 : v);
    }
}

// dx = scale * inv_std / m * (m * g - sum(g) - x_hat * sum(g * x_hat)) with x_hat = (x - mean) * inv_std and g the
// gradient reaching the normalization: dy, or with relu dy where y > 0 and 0 elsewhere (also the side input's).
template <class T, class S>
void bn_backward(const KernelContext& ctx) {
  const auto& a = std::get<BatchNormAttrs>(ctx.attrs);
  const auto [m, c] = bn_rows_of(ctx.inputs[1]);
  const T* dy = ctx.inputs[0].data<T>();
  const T* x = ctx.inputs[1].data<T>();
  const S* scale = ctx.inputs[2].data<S>();
  const S* mean = ctx.inputs[4].data<S>();
  const S* inv = ctx.inputs[5].data<S>();
  const T* y = a.ops != BatchNormOps::Bn ? ctx.inputs[7].data<T>() : nullptr;
  T* dside = a.ops == BatchNormOps::BnAddRelu ? ctx.outputs[3].data<T>() : nullptr;
  auto g_at = [&](int64_t i) { return y && !(bn_widen(y[i]) > 0) ? 0.0 : bn_widen(dy[i]); };
  std::vector<double> sum_g(static_cast<size_t>(c), 0.0), sum_gx(static_cast<size_t>(c), 0.0);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < c; ++j) {
      const int64_t i = r * c + j;
      const double g = g_at(i);
      sum_g[j] += g;
      sum_gx[j] += g * (bn_widen(x[i]) - static_cast<double>(mean[j])) * static_cast<double>(inv[j]);
      if (dside) dside[i] = bn_narrow<T>(g);
    }
  S* dscale = ctx.outputs[1].data<S>();
  S* doffset = ctx.outputs[2].data<S>();
  for (int64_t j = 0; j < c; ++j) {
    dscale[j] = static_cast<S>(sum_gx[j]);
    doffset[j] = static_cast<S>(sum_g[j]);
  }
  T* dx = ctx.outputs[0].data<T>();
  const double md = static_cast<double>(m);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < c; ++j) {
      const int64_t i = r * c + j;
      const double in = static_cast<double>(inv[j]);
      const double xhat = (bn_widen(x[i]) - static_cast<double>(mean[j])) * in;
      dx[i] = bn_narrow<T>(static_cast<double>(scale[j]) * in / md * (md * g_at(i) - sum_g[j] - xhat * sum_gx[j]));
    }
}

void fused_batch_norm_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_FLOAT(ctx.inputs[0].dtype(), "fused_batch_norm", {
    if constexpr (std::is_same_v<scalar_t, double>)
      bn_forward<double, double>(ctx);
    else
      bn_forward<scalar_t, float>(ctx);
  });
}

void fused_batch_norm_grad_cpu(const KernelContext& ctx) {
  EMBER_DISPATCH_FLOAT(ctx.inputs[0].dtype(), "fused_batch_norm_grad", {
    if constexpr (std::is_same_v<scalar_t, double>)
      bn_backward<double, double>(ctx);
    else
      bn_backward<scalar_t, float>(ctx);
  });
}

}  // namespace

EMBER_REGISTER_KERNEL(fused_batch_norm, CPU, fused_batch_norm_cpu, EMBER_FLOAT_DTYPES);
EMBER_REGISTER_KERNEL(fused_batch_norm_grad, CPU, fused_batch_norm_grad_cpu, EMBER_FLOAT_DTYPES);

}  // namespace ember
