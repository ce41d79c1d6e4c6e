#pragma once
// Fused optimizer updates (TF: tf.raw_ops.ApplyAdam): one pass over a variable and its slots instead of a
// dozen elementwise ops, for the optimizers' update_step. Not differentiable; they run outside tapes.
#include "framework/core/tensor.h"

namespace ember::ops {

struct AdamUpdate {
  Tensor variable, momentum, velocity;
};

// Keras's Adam step: m' = m + (g - m)(1 - beta_1), v' = v + (g^2 - v)(1 - beta_2),
// w' = w - m' alpha / (sqrt(v') + epsilon), with the bias correction in alpha. All four tensors share one
// shape and a float32/float64 dtype (supports(OpId::apply_adam, ...) says which); the results are new tensors.
AdamUpdate apply_adam(const Tensor& variable, const Tensor& momentum, const Tensor& velocity, const Tensor& gradient,
                      double alpha, double beta_1, double beta_2, double epsilon);
// The same step written into the three tensors' own buffers (TF's ResourceApplyAdam), for a caller that
// holds them exclusively (Variable::exclusive_value); the gradient must not share their storage.
void apply_adam_in_place(Tensor& variable, Tensor& momentum, Tensor& velocity, const Tensor& gradient, double alpha,
                         double beta_1, double beta_2, double epsilon);

}  // namespace ember::ops
