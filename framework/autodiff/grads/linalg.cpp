// Backward formula of matmul (TF: math_grad.py _MatMulGrad / _BatchMatMulV2Grad).
#include "framework/ops/linalg.h"

#include "framework/autodiff/grad_registry.h"

namespace ember {
namespace {

// For c = op(a) @ op(b), with op a transpose where the flag is set: each case keeps the product in
// the stored layout of a and b, so no explicit transpose is needed. Broadcast batch dimensions are
// then summed away.
std::vector<Tensor> matmul_grad(const GradContext& ctx) {
  const auto& at = std::get<MatMulAttrs>(ctx.attrs);
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  const Tensor& g = ctx.grads[0];
  Tensor da, db;
  if (!at.transpose_a && !at.transpose_b) {
    da = ops::matmul(g, b, {.transpose_b = true});
    db = ops::matmul(a, g, {.transpose_a = true});
  } else if (!at.transpose_a && at.transpose_b) {
    da = ops::matmul(g, b);
    db = ops::matmul(g, a, {.transpose_a = true});
  } else if (at.transpose_a && !at.transpose_b) {
    da = ops::matmul(b, g, {.transpose_b = true});
    db = ops::matmul(a, g);
  } else {
    da = ops::matmul(b, g, {.transpose_a = true, .transpose_b = true});
    db = ops::matmul(g, a, {.transpose_a = true, .transpose_b = true});
  }
  return {unbroadcast(da, a.shape()), unbroadcast(db, b.shape())};
}

}  // namespace

EMBER_REGISTER_GRADIENT(matmul, matmul_grad);

}  // namespace ember
