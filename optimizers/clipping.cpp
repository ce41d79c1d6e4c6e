#include "optimizers/clipping.h"

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"

namespace ember::optimizers::detail {

namespace {
Tensor clip_scalar(double v, const Tensor& t) { return Tensor::scalar_of(v, t.dtype(), Device::cpu()); }
}  // namespace

// tf.clip_by_norm: the two-where form keeps an all-zero gradient finite (and its gradient NaN-free).
Tensor clip_by_norm(const Tensor& g, double clip_norm) {
  Tensor l2sum = ops::reduce_sum(ops::square(g), {}, true);
  Tensor pred = ops::greater(l2sum, clip_scalar(0, l2sum));
  Tensor l2sum_safe = ops::where(pred, l2sum, ops::ones_like(l2sum));
  Tensor l2norm = ops::where(pred, ops::sqrt(l2sum_safe), l2sum);
  return (g * clip_norm) / ops::maximum(l2norm, clip_scalar(clip_norm, l2norm));
}

// Keras's clip_by_global_norm; the squared norms are stacked and summed as Keras does.
void clip_by_global_norm(std::vector<Tensor>& grads, double clip_norm) {
  const DType dt = grads.front().dtype();
  std::vector<Tensor> squared;
  for (const Tensor& g : grads) squared.push_back(ops::cast(ops::reduce_sum(ops::square(g)), dt));
  Tensor use_norm = ops::sqrt(ops::reduce_sum(ops::stack(squared)));
  Tensor scale =
      clip_norm * ops::minimum(1.0 / use_norm, clip_scalar(1.0 / clip_norm, use_norm)) + (use_norm - use_norm);
  for (Tensor& g : grads) g = g * (g.dtype() == dt ? scale : ops::cast(scale, g.dtype()));
}

}  // namespace ember::optimizers::detail
