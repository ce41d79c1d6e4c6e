// Backward formula of matmul (TF: math_grad.py _MatMulGrad / _BatchMatMulV2Grad).
#include "framework/ops/linalg.h"

#include "framework/autodiff/grad_registry.h"

namespace ember {
namespace {

// For c = op(a) @ op(b), with op a transpose where the flag is set: each case keeps the product in
// the stored layout of a and b, so no explicit transpose is needed. Broadcast batch dimensions are
// then summed away. An operand that leads to no source (a model's input batch) gets no product.
std::vector<Tensor> matmul_grad(const GradContext& ctx) {
  const auto& at = std::get<MatMulAttrs>(ctx.attrs);
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  const Tensor& g = ctx.grads[0];
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

}  // namespace

EMBER_REGISTER_GRADIENT(matmul, matmul_grad);

}  // namespace ember
