// Keras's rank-matching rule and the float32 helpers, shared by losses and metrics.
#include "framework/ops/tensor_helpers.h"

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"

namespace ember::ops {

std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(Tensor x1, Tensor x2, bool expand_rank_1) {
  const int64_t r1 = x1.rank(), r2 = x2.rank();
  if (r1 == r2) return {std::move(x1), std::move(x2)};
  // Keras tests both directions in turn; at most one of them can apply.
  if (r1 == r2 + 1 && x1.shape()[r1 - 1] == 1) {
    if (r2 == 1 && expand_rank_1)
      x2 = expand_dims(x2, -1);
    else
      x1 = squeeze(x1, {-1});
  } else if (r2 == r1 + 1 && x2.shape()[r2 - 1] == 1) {
    if (r1 == 1 && expand_rank_1)
      x1 = expand_dims(x1, -1);
    else
      x2 = squeeze(x2, {-1});
  }
  return {std::move(x1), std::move(x2)};
}

Tensor to_float32(const Tensor& x) { return x.dtype() == DType::Float32 ? x : cast(x, DType::Float32); }

Tensor f32(double v) { return Tensor::scalar_of(v, DType::Float32, Device::cpu()); }

}  // namespace ember::ops
