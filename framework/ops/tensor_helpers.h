#pragma once
// Tensor helpers that losses and metrics share (Keras: losses/loss.py squeeze_or_expand_to_same_rank),
// written with eager ops so losses keep their gradients.
#include <utility>

#include "framework/core/tensor.h"

namespace ember::ops {

// Keras's squeeze_or_expand_to_same_rank: when the ranks differ by exactly one and the longer tensor's
// last dimension is 1, squeezes it away, or (expand_rank_1, the shorter being rank 1) expands the
// shorter one instead. Other shapes come back unchanged.
std::pair<Tensor, Tensor> squeeze_or_expand_to_same_rank(Tensor x1, Tensor x2, bool expand_rank_1 = true);

// x as float32 (a cast only when needed; the cast carries gradients for floating x).
Tensor to_float32(const Tensor& x);

// A float32 scalar tensor holding v (rounded as Python's float would be when TF converts it to float32).
Tensor f32(double v);

}  // namespace ember::ops
