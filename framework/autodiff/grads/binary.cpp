// Backward formulas of the broadcasting binary and ternary elementwise ops (TF: math_grad.py). Each
// input's gradient is computed at the broadcast output shape, then summed back to the input's shape.
#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/grads/grad_util.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember {
namespace {

using Grads = std::vector<Tensor>;

using grad_util::masked;
using grad_util::masked_out;

// The two gradients of a binary op, each reduced to its input's shape; ga() and gb() run only for the
// inputs that lead to a source (a constant divisor's gradient is never computed).
template <class A, class B>
Grads reduced(const GradContext& c, A ga, B gb) {
  return {c.needs(0) ? unbroadcast(ga(), c.inputs[0].shape()) : Tensor(),
          c.needs(1) ? unbroadcast(gb(), c.inputs[1].shape()) : Tensor()};
}

Grads add_grad(const GradContext& c) {
  return reduced(c, [&] { return c.grads[0]; }, [&] { return c.grads[0]; });
}
Grads sub_grad(const GradContext& c) {
  return reduced(c, [&] { return c.grads[0]; }, [&] { return ops::neg(c.grads[0]); });
}
Grads mul_grad(const GradContext& c) {
  const Tensor& dy = c.grads[0];
  return reduced(c, [&] { return dy * c.inputs[1]; }, [&] { return c.inputs[0] * dy; });
}
// d/dy (x / y) = -x / y^2, divided twice rather than by y * y so it does not overflow first.
Grads div_grad(const GradContext& c) {
  const Tensor &x = c.inputs[0], &y = c.inputs[1], &dy = c.grads[0];
  return reduced(c, [&] { return dy / y; }, [&] { return dy * ((ops::neg(x) / y) / y); });
}
// TF _DivNoNanGrad: as div's, with each division by y a div_no_nan (0 where y == 0, not NaN).
Grads div_no_nan_grad(const GradContext& c) {
  const Tensor &x = c.inputs[0], &y = c.inputs[1], &dy = c.grads[0];
  return reduced(c, [&] { return ops::div_no_nan(dy, y); },
                 [&] { return dy * ops::div_no_nan(ops::div_no_nan(ops::neg(x), y), y); });
}
// Floor modulo x - floor(x / y) y.
Grads mod_grad(const GradContext& c) {
  const Tensor &x = c.inputs[0], &y = c.inputs[1], &dy = c.grads[0];
  return reduced(c, [&] { return dy; }, [&] { return dy * ops::neg(ops::floordiv(x, y)); });
}
// TF: the exponent's gradient is taken as zero where x <= 0, where log(x) is not real.
Grads pow_grad(const GradContext& c) {
  const Tensor &x = c.inputs[0], &y = c.inputs[1], &z = c.outputs[0], &dy = c.grads[0];
  return reduced(c, [&] { return dy * y * ops::pow(x, y - 1.0); },
                 [&] {
                   Tensor zero = ops::zeros_like(x);
                   Tensor positive = ops::greater(x, zero);
                   Tensor log_x = ops::where(positive, ops::log(ops::where(positive, x, ops::ones_like(x))), zero);
                   return dy * z * log_x;
                 });
}
// TF: ties go to x.
Grads maximum_grad(const GradContext& c) {
  Tensor x_wins = ops::greater_equal(c.inputs[0], c.inputs[1]);
  return reduced(c, [&] { return masked(x_wins, c.grads[0]); }, [&] { return masked_out(x_wins, c.grads[0]); });
}
Grads minimum_grad(const GradContext& c) {
  Tensor x_wins = ops::less_equal(c.inputs[0], c.inputs[1]);
  return reduced(c, [&] { return masked(x_wins, c.grads[0]); }, [&] { return masked_out(x_wins, c.grads[0]); });
}
Grads squared_difference_grad(const GradContext& c) {
  Tensor gx = 2.0 * c.grads[0] * (c.inputs[0] - c.inputs[1]);
  return reduced(c, [&] { return gx; }, [&] { return ops::neg(gx); });
}
// relu_grad is linear in the gradients and piecewise constant in the features (TF: _ReluGradGrad).
Grads relu_grad_grad(const GradContext& c) {
  const Tensor& features = c.inputs[1];
  return reduced(c, [&] { return ops::relu_grad(c.grads[0], features); }, [&] { return ops::zeros_like(features); });
}

// The condition takes no gradient.
Grads where_grad(const GradContext& c) {
  const Tensor &cond = c.inputs[0], &dy = c.grads[0];
  return {Tensor(), unbroadcast(masked(cond, dy), c.inputs[1].shape()),
          unbroadcast(masked_out(cond, dy), c.inputs[2].shape())};
}
// TF: x gets dy where lo <= x <= hi; a bound gets dy where it clipped x.
Grads clip_by_value_grad(const GradContext& c) {
  const Tensor &x = c.inputs[0], &lo = c.inputs[1], &hi = c.inputs[2], &dy = c.grads[0];
  Tensor below = ops::less(x, lo);
  Tensor above = ops::greater(x, hi);
  return {unbroadcast(masked_out(ops::logical_or(below, above), dy), x.shape()),
          unbroadcast(masked(below, dy), lo.shape()), unbroadcast(masked(above, dy), hi.shape())};
}

}  // namespace

EMBER_REGISTER_GRADIENT(add, add_grad);
EMBER_REGISTER_GRADIENT(sub, sub_grad);
EMBER_REGISTER_GRADIENT(mul, mul_grad);
EMBER_REGISTER_GRADIENT(div, div_grad);
EMBER_REGISTER_GRADIENT(div_no_nan, div_no_nan_grad);
EMBER_REGISTER_GRADIENT(mod, mod_grad);
EMBER_REGISTER_GRADIENT(pow, pow_grad);
EMBER_REGISTER_GRADIENT(maximum, maximum_grad);
EMBER_REGISTER_GRADIENT(minimum, minimum_grad);
EMBER_REGISTER_GRADIENT(squared_difference, squared_difference_grad);
EMBER_REGISTER_GRADIENT(relu_grad, relu_grad_grad);
EMBER_REGISTER_GRADIENT(where, where_grad);
EMBER_REGISTER_GRADIENT(clip_by_value, clip_by_value_grad);

}  // namespace ember
