// Backward formulas of the unary elementwise ops (TF: math_grad.py, nn_grad.py). Where the forward
// output gives the derivative cheaply (exp, tanh, sigmoid, elu...) the formula reads the saved output,
// as TF does; everything is written with eager ops so nested tapes can differentiate it again.
#include <variant>

#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/grads/grad_util.h"
#include "framework/core/error.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember {
namespace {

using Grads = std::vector<Tensor>;

using grad_util::scalar_like;

using grad_util::masked;

const Tensor& x0(const GradContext& c) { return c.inputs[0]; }
const Tensor& y0(const GradContext& c) { return c.outputs[0]; }
const Tensor& dy0(const GradContext& c) { return c.grads[0]; }

Grads neg_grad(const GradContext& c) { return {ops::neg(dy0(c))}; }
Grads abs_grad(const GradContext& c) { return {dy0(c) * ops::sign(x0(c))}; }
Grads exp_grad(const GradContext& c) { return {dy0(c) * y0(c)}; }
Grads log_grad(const GradContext& c) { return {dy0(c) / x0(c)}; }
Grads log1p_grad(const GradContext& c) { return {dy0(c) / (1.0 + x0(c))}; }
Grads sqrt_grad(const GradContext& c) { return {dy0(c) * 0.5 / y0(c)}; }
Grads rsqrt_grad(const GradContext& c) {
  const Tensor& y = y0(c);
  return {dy0(c) * -0.5 * (y * y * y)};
}
Grads square_grad(const GradContext& c) { return {dy0(c) * (2.0 * x0(c))}; }
Grads reciprocal_grad(const GradContext& c) {
  const Tensor& y = y0(c);
  return {ops::neg(dy0(c)) * (y * y)};
}
Grads sin_grad(const GradContext& c) { return {dy0(c) * ops::cos(x0(c))}; }
Grads cos_grad(const GradContext& c) { return {ops::neg(dy0(c)) * ops::sin(x0(c))}; }
Grads tanh_grad(const GradContext& c) { return {fused_activation_grad(FusedActivation::Tanh, dy0(c), y0(c))}; }
Grads sigmoid_grad(const GradContext& c) { return {fused_activation_grad(FusedActivation::Sigmoid, dy0(c), y0(c))}; }

// TF: the gradient passes where the input is strictly positive (zero at the kink), in one pass.
Grads relu_grad(const GradContext& c) { return {ops::relu_grad(dy0(c), x0(c))}; }
Grads relu6_grad(const GradContext& c) {
  const Tensor& x = x0(c);
  Tensor inside = ops::logical_and(ops::greater(x, ops::zeros_like(x)), ops::less(x, scalar_like(x, 6)));
  return {masked(inside, dy0(c))};
}
// elu(x) = expm1(x) below zero, so its derivative there is y + 1.
Grads elu_grad(const GradContext& c) {
  const Tensor& y = y0(c);
  const Tensor& dy = dy0(c);
  return {ops::where(ops::less(y, ops::zeros_like(y)), dy * (y + 1.0), dy)};
}
Grads selu_grad(const GradContext& c) {
  constexpr double kScale = 1.0507009873554804934193349852946;
  constexpr double kAlpha = 1.6732632423543772848170429916717;
  const Tensor& y = y0(c);
  const Tensor& dy = dy0(c);
  return {ops::where(ops::less(y, ops::zeros_like(y)), dy * (y + kScale * kAlpha), dy * kScale)};
}

// Exact: Phi(x) + x phi(x). No erf op exists, so Phi comes from the saved output, gelu(x) = x Phi(x);
// y / x keeps full relative precision and, differentiated again, gives phi as it should.
// Approximate: the derivative of 0.5 x (1 + tanh(k (x + 0.044715 x^3))), as TF writes it.
Grads gelu_grad(const GradContext& c) {
  const Tensor& x = x0(c);
  const Tensor& dy = dy0(c);
  if (std::get<GeluAttrs>(c.attrs).approximate) {
    constexpr double kSqrt2OverPi = 0.7978845608028654;
    constexpr double kCoeff = 0.044715;
    Tensor x2 = x * x;
    Tensor t = ops::tanh(kSqrt2OverPi * (x + kCoeff * (x2 * x)));
    Tensor d = 0.5 * (1.0 + t) + (0.5 * x) * (1.0 - t * t) * (kSqrt2OverPi * (1.0 + (3.0 * kCoeff) * x2));
    return {dy * d};
  }
  constexpr double kInvSqrt2Pi = 0.3989422804014327;
  Tensor zero = ops::zeros_like(x);
  Tensor is_zero = ops::equal(x, zero);
  Tensor safe_x = ops::where(is_zero, ops::ones_like(x), x);
  Tensor cdf = ops::where(is_zero, zero + 0.5, y0(c) / safe_x);
  Tensor pdf = kInvSqrt2Pi * ops::exp(-0.5 * (x * x));
  return {dy * (cdf + x * pdf)};
}
Grads softplus_grad(const GradContext& c) { return {dy0(c) * ops::sigmoid(x0(c))}; }
Grads softsign_grad(const GradContext& c) {
  Tensor d = 1.0 + ops::abs(x0(c));
  return {dy0(c) / (d * d)};
}
// swish = x s(x): s (1 + x (1 - s)).
Grads swish_grad(const GradContext& c) {
  const Tensor& x = x0(c);
  Tensor s = ops::sigmoid(x);
  return {dy0(c) * (s * (1.0 + x * (1.0 - s)))};
}

// The gradient goes back in the input's dtype. A cast from or to an integer or bool tensor carries none,
// as TF's _CastGrad returns None: `loss * cast(loss > 0, float32)` differentiates through `loss` alone.
Grads cast_grad(const GradContext& c) {
  const DType in = x0(c).dtype();
  if (!is_floating(in) || !is_floating(y0(c).dtype())) return {Tensor()};
  return {ops::cast(dy0(c), in)};
}

}  // namespace

Tensor fused_activation_grad(FusedActivation activation, const Tensor& dy, const Tensor& y) {
  switch (activation) {
    case FusedActivation::Relu: return ops::relu_grad(dy, y);
    case FusedActivation::Tanh: return dy * (1.0 - y * y);
    case FusedActivation::Sigmoid: return dy * (y * (1.0 - y));
    default: return dy;
  }
}

EMBER_REGISTER_GRADIENT(neg, neg_grad);
EMBER_REGISTER_GRADIENT(abs, abs_grad);
EMBER_REGISTER_GRADIENT(exp, exp_grad);
EMBER_REGISTER_GRADIENT(log, log_grad);
EMBER_REGISTER_GRADIENT(log1p, log1p_grad);
EMBER_REGISTER_GRADIENT(sqrt, sqrt_grad);
EMBER_REGISTER_GRADIENT(rsqrt, rsqrt_grad);
EMBER_REGISTER_GRADIENT(square, square_grad);
EMBER_REGISTER_GRADIENT(reciprocal, reciprocal_grad);
EMBER_REGISTER_GRADIENT(sin, sin_grad);
EMBER_REGISTER_GRADIENT(cos, cos_grad);
EMBER_REGISTER_GRADIENT(tanh, tanh_grad);
EMBER_REGISTER_GRADIENT(sigmoid, sigmoid_grad);
EMBER_REGISTER_GRADIENT(relu, relu_grad);
EMBER_REGISTER_GRADIENT(relu6, relu6_grad);
EMBER_REGISTER_GRADIENT(elu, elu_grad);
EMBER_REGISTER_GRADIENT(selu, selu_grad);
EMBER_REGISTER_GRADIENT(gelu, gelu_grad);
EMBER_REGISTER_GRADIENT(softplus, softplus_grad);
EMBER_REGISTER_GRADIENT(softsign, softsign_grad);
EMBER_REGISTER_GRADIENT(swish, swish_grad);
EMBER_REGISTER_GRADIENT(cast, cast_grad);

}  // namespace ember
