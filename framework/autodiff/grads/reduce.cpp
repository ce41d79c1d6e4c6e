// Backward formulas of the differentiable reductions (TF: math_grad.py _SumGrad, _MeanGrad,
// _MaxGrad/_MinGrad, _ProdGrad).
#include "framework/ops/reduce.h"

#include "framework/autodiff/grad_registry.h"
#include "framework/autodiff/grads/grad_util.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"

namespace ember {
namespace {

const ReduceAttrs& reduce_attrs(const GradContext& ctx) { return std::get<ReduceAttrs>(ctx.attrs); }

// The input's shape with every reduced axis set to 1 (the keepdims output shape).
Shape kept_shape(const Shape& in, const ReduceAttrs& a) {
  Shape s = in;
  for (int64_t ax : a.axes) s[ax] = 1;
  return s;
}

// Number of elements folded into each output element.
int64_t reduced_count(const Shape& in, const ReduceAttrs& a) {
  int64_t n = 1;
  for (int64_t ax : a.axes) n *= in[ax];
  return n;
}

using grad_util::scalar_like;

// dy (or y) reshaped to the keepdims shape, so it broadcasts against the input.
Tensor kept(const Tensor& t, const GradContext& ctx) {
  return ops::reshape(t, kept_shape(ctx.inputs[0].shape(), reduce_attrs(ctx)));
}

// t broadcast to the input's shape; t itself where every reduced dimension has size 1 (a batch-1 loss's sum).
Tensor to_input_shape(const Tensor& t, const GradContext& ctx) {
  const Shape& shape = ctx.inputs[0].shape();
  return t.shape() == shape ? t : ops::broadcast_to(t, shape);
}

std::vector<Tensor> reduce_sum_grad(const GradContext& ctx) { return {to_input_shape(kept(ctx.grads[0], ctx), ctx)}; }

std::vector<Tensor> reduce_mean_grad(const GradContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const int64_t n = reduced_count(x.shape(), reduce_attrs(ctx));
  Tensor dy = kept(ctx.grads[0], ctx);
  // An empty slice has no elements to receive a gradient; avoid dividing by zero.
  if (n > 1) dy = dy / static_cast<double>(n);
  return {to_input_shape(dy, ctx)};
}

// max and min: the gradient goes to every element equal to the result, split evenly among ties.
std::vector<Tensor> reduce_extremum_grad(const GradContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const ReduceAttrs& a = reduce_attrs(ctx);
  Tensor y = kept(ctx.outputs[0], ctx);
  Tensor dy = kept(ctx.grads[0], ctx);
  Tensor indicators = ops::cast(ops::equal(x, y), dy.dtype());
  Tensor num_selected = ops::reduce_sum(indicators, a.axes, /*keepdims=*/true);
  return {indicators / num_selected * dy};
}

// prod: the gradient of x_i is the product of the other elements of its slice. It is computed from
// the product p of the slice's non-zero elements and its zero count z, which stays exact with zeros
// (where TF uses exclusive cumprods): z == 0 gives p / x_i; z == 1 gives p at the zero and 0
// elsewhere; z >= 2 gives 0 everywhere.
std::vector<Tensor> reduce_prod_grad(const GradContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const ReduceAttrs& a = reduce_attrs(ctx);
  Tensor dy = kept(ctx.grads[0], ctx);
  Tensor zero = scalar_like(x, 0);
  Tensor is_zero = ops::equal(x, zero);
  Tensor safe_x = ops::where(is_zero, scalar_like(x, 1), x);
  Tensor p = ops::reduce_prod(safe_x, a.axes, /*keepdims=*/true);
  Tensor z = ops::reduce_sum(ops::cast(is_zero, x.dtype()), a.axes, /*keepdims=*/true);
  Tensor at_zero = ops::where(ops::equal(z, scalar_like(z, 1)), p, zero);
  Tensor at_nonzero = ops::where(ops::equal(z, zero), p / safe_x, zero);
  return {ops::where(is_zero, at_zero, at_nonzero) * dy};
}

}  // namespace

EMBER_REGISTER_GRADIENT(reduce_sum, reduce_sum_grad);
EMBER_REGISTER_GRADIENT(reduce_mean, reduce_mean_grad);
EMBER_REGISTER_GRADIENT(reduce_max, reduce_extremum_grad);
EMBER_REGISTER_GRADIENT(reduce_min, reduce_extremum_grad);
EMBER_REGISTER_GRADIENT(reduce_prod, reduce_prod_grad);

}  // namespace ember
