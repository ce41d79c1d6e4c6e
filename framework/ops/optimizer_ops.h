#pragma once
// Fused optimizer updates (TF: tf.raw_ops.ApplyAdam): one pass over a variable and its slots instead of a
// dozen elementwise ops, for the optimizers' update_step. Not differentiable; they run outside tapes.
#include <vector>

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

// One variable of apply_adam_multi_in_place: its value and slots, updated in place, and its gradient.
struct AdamSlots {
  Tensor variable, momentum, velocity, gradient;
};

// apply_adam_in_place over several variables in one pass (one kernel launch per few dozen variables on a GPU,
// PyTorch's fused Adam), with Keras's step size lr sqrt(1 - beta_2^t) / (1 - beta_1^t) made by the kernel from
// `step` (0-d int64: the count of earlier updates, t = step + 1), and nothing changed unless `condition` (0-d
// bool) is true. Both may live on the device, so that neither has to be read on the host: a skipped mixed
// precision step stays on the GPU's queue. Every tensor has one float32/float64 dtype and one device, each
// slot's four share a shape, and no two updated buffers are shared. The bits are apply_adam_in_place's with
// alpha = Adam's step size on the host (optimizers::Adam), element for element.
void apply_adam_multi_in_place(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                               double learning_rate, double beta_1, double beta_2, double epsilon);

// One variable of apply_sgd_multi_in_place: its value and momentum (undefined without momentum), updated in
// place, and its gradient.
struct SgdSlots {
  Tensor variable, momentum, gradient;
};

// Keras's SGD step (functors::SgdStep) over several variables in one pass, in place, where `condition` (0-d bool,
// on the host or the device) is true. `momentum` 0 means no momentum slots; otherwise every slot has one. The
// dtype and device rules and the bits are apply_adam_multi_in_place's (the SGD ops', element for element).
void apply_sgd_multi_in_place(const std::vector<SgdSlots>& slots, const Tensor& condition, double learning_rate,
                              double momentum, bool nesterov);

// At most this many rows in the factors of apply_adam_factored.
constexpr int64_t kFactoredMaxRows = 8;

// apply_adam_in_place with the gradient given as the factors of the product matmul(a, b, {.transpose_a = true}):
// a (k, rows) and b (k, cols) for a (rows, cols) variable, 1 <= k <= kFactoredMaxRows: a Dense kernel's gradient
// x^T @ dy at a batch of k. Each gradient element is made where it is used and never written out, saving the
// product's pass over the variable's size; it is the product's own value (the first term rounded, then one
// fused multiply-add per further term, in order, as oneDNN's sgemm sums a short inner dimension), so the step
// gives the bits of matmul then apply_adam_in_place.
void apply_adam_factored_in_place(Tensor& variable, Tensor& momentum, Tensor& velocity, const Tensor& a,
                                  const Tensor& b, double alpha, double beta_1, double beta_2, double epsilon);
// Whether apply_adam_factored_in_place beats the product then apply_adam_in_place for a (rows, cols) variable on
// `device`: on the CPU, whose kernel vectorizes along a row, for rows at least 16 wide (a 256 x 10 kernel at a
// batch of 8 took 3.1 us against 2.3 for the two ops).
bool factored_adam_pays(const Shape& variable, DeviceType device);

struct UnscaledGradient {
  Tensor gradient;  // the gradient divided by the loss scale
  Tensor finite;    // 0-d bool: the `finite` passed in, and every element of the gradient finite
};

// Dynamic loss scaling's pass over one gradient (PyTorch's _amp_foreach_non_finite_check_and_unscale_): the
// gradient divided by `scale` (0-d, the gradient's dtype; ops::div's values), and `finite` (0-d bool) and-ed
// with whether every element of the gradient is finite, which chains the check over all of a step's gradients.
// Float32 or float64; all three on one device. One read of the gradient instead of four ops.
UnscaledGradient unscale_gradient(const Tensor& gradient, const Tensor& scale, const Tensor& finite);

}  // namespace ember::ops
