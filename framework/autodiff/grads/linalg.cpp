// Backward formulas of matmul (TF: math_grad.py _MatMulGrad / _BatchMatMulV2Grad) and matmul_bias.
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/optimizer_ops.h"

#include "framework/autodiff/grad_registry.h"

namespace ember {
namespace {

// For c = op(a) @ op(b), with op a transpose where the flag is set: each case keeps the product in
// the stored layout of a and b, so no explicit transpose is needed. Broadcast batch dimensions are
// then summed away. An operand that leads to no source (a model's input batch) gets no product.
// g is the gradient of the product.
std::vector<Tensor> product_grads(const GradContext& ctx, const Tensor& g) {
  const auto& at = std::get<MatMulAttrs>(ctx.attrs);
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor da, db;
  if (ctx.needs(0)) {
    if (!at.transpose_a) da = ops::matmul(g, b, {.transpose_b = !at.transpose_b});
    else da = ops::matmul(b, g, {.transpose_a = at.transpose_b, .transpose_b = true});
    da = unbroadcast(da, a.shape());
  }
  if (ctx.needs(1)) {
    if (!at.transpose_b) db = ops::matmul(a, g, {.transpose_a = !at.transpose_a});
    else db = ops::matmul(g, a, {.transpose_a = true, .transpose_b = at.transpose_a});
    db = unbroadcast(db, b.shape());
  }
  return {da, db};
}

std::vector<Tensor> matmul_grad(const GradContext& ctx) { return product_grads(ctx, ctx.grads[0]); }

// matmul_bias: a fused activation first takes its gradient from the op's output, as the activation's own formula
// does; then the product's two gradients, and the bias's: the gradient summed over the rows, as add's gradient
// does it.
std::vector<Tensor> matmul_bias_grad(const GradContext& ctx) {
  const Tensor g = fused_activation_grad(std::get<MatMulAttrs>(ctx.attrs).activation, ctx.grads[0], ctx.outputs[0]);
  std::vector<Tensor> grads = product_grads(ctx, g);
  grads.push_back(ctx.needs(2) ? unbroadcast(g, ctx.inputs[2].shape()) : Tensor());
  return grads;
}

}  // namespace

EMBER_REGISTER_GRADIENT(matmul, matmul_grad);
EMBER_REGISTER_GRADIENT(matmul_bias, matmul_bias_grad);

}  // namespace ember
