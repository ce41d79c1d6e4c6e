// Backward formulas of softmax and log_softmax (TF: nn_grad.py _SoftmaxGrad, _LogSoftmaxGrad),
// written from the saved output so they need no second exponentiation of the logits.
#include "framework/autodiff/grad_registry.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember {
namespace {

// dx = (dy - sum(dy * y)) * y along the axis.
std::vector<Tensor> softmax_grad(const GradContext& ctx) {
  const int64_t axis = std::get<AxisAttrs>(ctx.attrs).axis;
  const Tensor& y = ctx.outputs[0];
  const Tensor& dy = ctx.grads[0];
  return {(dy - ops::reduce_sum(dy * y, axis, /*keepdims=*/true)) * y};
}

// dx = dy - softmax(x) * sum(dy), with softmax(x) = exp(log_softmax(x)).
std::vector<Tensor> log_softmax_grad(const GradContext& ctx) {
  const int64_t axis = std::get<AxisAttrs>(ctx.attrs).axis;
  const Tensor& y = ctx.outputs[0];
  const Tensor& dy = ctx.grads[0];
  return {dy - ops::exp(y) * ops::reduce_sum(dy, axis, /*keepdims=*/true)};
}

}  // namespace

EMBER_REGISTER_GRADIENT(softmax, softmax_grad);
EMBER_REGISTER_GRADIENT(log_softmax, log_softmax_grad);

}  // namespace ember
