// Backward formulas of softmax and log_softmax (TF: nn_grad.py _SoftmaxGrad, _LogSoftmaxGrad), written from
// the saved output so they need no second exponentiation of the logits, and of the sparse softmax
// crossentropy (_SparseSoftmaxCrossEntropyWithLogitsGrad).
#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/gradient_tape.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/nn.h"
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

// dlogits = dloss[..., None] * (softmax(logits) - one_hot(labels)) (TF's backprop output); the integer
// labels get none. The backprop is one op, unless a tape records ops on the logits (a higher-order
// gradient): then it is written with differentiable ops, so that second derivatives are right.
std::vector<Tensor> sparse_xent_grad(const GradContext& ctx) {
  const Tensor& logits = ctx.inputs[0];
  const Tensor& labels = ctx.inputs[1];
  const int64_t classes = logits.shape()[logits.rank() - 1];
  const Tensor backprop = any_tape_records(std::span<const Tensor>(&logits, 1))
                              ? ops::softmax(logits, -1) - ops::one_hot(labels, classes, {.dtype = logits.dtype()})
                              : ops::sparse_softmax_cross_entropy_backprop(labels, logits);
  return {ops::expand_dims(ctx.grads[0], -1) * backprop, Tensor()};
}

}  // namespace

EMBER_REGISTER_GRADIENT(softmax, softmax_grad);
EMBER_REGISTER_GRADIENT(sparse_softmax_cross_entropy_with_logits, sparse_xent_grad);
EMBER_REGISTER_GRADIENT(log_softmax, log_softmax_grad);

}  // namespace ember
