#include "framework/autodiff/grad_registry.h"

#include "framework/ops/array.h"
#include "framework/ops/reduce.h"

namespace ember {

namespace {
GradFn& slot(OpId op) {
  static GradFn table[kNumOps] = {};
  return table[static_cast<int>(op)];
}
}  // namespace

void register_gradient(OpId op, GradFn fn) { slot(op) = fn; }

GradFn gradient_function(OpId op) { return slot(op); }

Tensor unbroadcast(const Tensor& grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t lead = grad.rank() - shape.rank();
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < grad.rank(); ++i)
    if (i < lead || (shape[i - lead] == 1 && grad.shape()[i] != 1)) axes.push_back(i);
  // Only leading axes summed away (a bias's gradient): the reduction gives the shape itself, no reshape.
  if (!axes.empty() && axes.back() < lead) return ops::reduce_sum(grad, axes);
  Tensor summed = axes.empty() ? grad : ops::reduce_sum(grad, axes, /*keepdims=*/true);
  return ops::reshape(summed, shape);
}

}  // namespace ember
