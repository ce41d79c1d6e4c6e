// Backward formula of the fused batch norm: its own kernel (cuDNN's backward on CUDA), from the saved mean and
// inv_std, unless a tape records ops on its inputs (a higher-order gradient): then it is written with
// differentiable ops that compute the statistics again from x, so that second derivatives are right. The
// statistics outputs take no gradient (they feed the moving averages), as in TF's FusedBatchNormGrad.
#include <numeric>

#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/ops/batch_norm.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember {
namespace {

Tensor bn_as(const Tensor& t, DType d) { return t.dtype() == d ? t : ops::cast(t, d); }

std::vector<Tensor> bn_differentiable_grad(const GradContext& ctx, const BatchNormAttrs& a) {
  const Tensor &x = ctx.inputs[0], &scale = ctx.inputs[1];
  const DType sd = scale.dtype();
  std::vector<int64_t> axes(static_cast<size_t>(x.rank() - 1));
  std::iota(axes.begin(), axes.end(), int64_t{0});
  const Tensor xs = bn_as(x, sd);
  const Tensor mean = ops::reduce_mean(xs, axes, true);
  const Tensor centered = xs - mean;
  const Tensor inv = ops::rsqrt(ops::reduce_mean(ops::square(centered), axes, true) + a.epsilon);
  const Tensor xhat = centered * inv;
  Tensor g = bn_as(ctx.grads[0], sd);
  if (a.ops != BatchNormOps::Bn) g = ops::relu_grad(g, bn_as(ctx.outputs[0], sd));  // the mask has no derivative
  const Tensor dx = scale * inv *
                    (g - ops::reduce_mean(g, axes, true) - xhat * ops::reduce_mean(g * xhat, axes, true));
  std::vector<Tensor> out = {bn_as(dx, x.dtype()), ops::reduce_sum(g * xhat, axes), ops::reduce_sum(g, axes)};
  if (a.ops == BatchNormOps::BnAddRelu) out.push_back(bn_as(g, x.dtype()));
  return out;
}

std::vector<Tensor> fused_batch_norm_grad(const GradContext& ctx) {
  const auto& a = std::get<BatchNormAttrs>(ctx.attrs);
  std::vector<Tensor> watched(ctx.inputs.begin(), ctx.inputs.end());
  watched.push_back(ctx.grads[0]);
  if (any_tape_records(watched)) return bn_differentiable_grad(ctx, a);
  std::optional<Tensor> y;
  if (a.ops != BatchNormOps::Bn) y = ctx.outputs[0];
  return ops::fused_batch_norm_grad(ctx.grads[0], ctx.inputs[0], ctx.inputs[1], ctx.inputs[2], ctx.outputs[1],
                                    ctx.outputs[3], ctx.outputs[4], a.epsilon, a.ops, y);
}

}  // namespace

EMBER_REGISTER_GRADIENT(fused_batch_norm, fused_batch_norm_grad);

}  // namespace ember
