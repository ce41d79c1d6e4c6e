#pragma once
// Fused optimizer updates (TF: tf.raw_ops.ApplyAdam): one pass over a variable and its slots instead of a
// dozen elementwise ops, for the optimizers' update_step. Not differentiable; they run outside tapes.
#include <vector>

#include "framework/core/tensor.h"
#include "framework/ops/dispatch.h"

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

// One variable of apply_adam_multi_in_place: its value and slots, updated in place, and its gradient: whole, or
// (on the CPU) as the factors a (k, rows) and b (k, cols) of a rows x cols gradient a^T @ b (the gradient then
// undefined), a Dense kernel's x^T @ dy. Up to kFactoredMaxRows rows, as apply_adam_factored_in_place takes them.
struct AdamSlots {
  Tensor variable, momentum, velocity, gradient;
  Tensor a{}, b{};
};

// apply_adam_in_place over several variables in one pass (one parallel region on the CPU, one kernel launch per
// few dozen variables on a GPU: PyTorch's fused Adam), with Keras's step size lr sqrt(1 - beta_2^t) / (1 - beta_1^t)
// made by the kernel from `step` (0-d int64: the count of earlier updates, t = step + 1) and `learning_rate` (0-d
// float32 or float64, rounded to the variables' dtype), and nothing changed unless `condition` (0-d bool) is true.
// All three may live on the device, so that none has to be read on the host: a skipped mixed precision step
// stays on the GPU's queue, and a traced step reads the optimizer's variables when it runs. Every tensor has one
// float32/float64 dtype and one device, each slot's four share a shape, and no two updated buffers are shared.
// The bits are apply_adam_in_place's (apply_adam_factored_in_place's for factors) with alpha = Adam's step size
// on the host (optimizers::Adam), element for element.
void apply_adam_multi_in_place(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                               const Tensor& learning_rate, double beta_1, double beta_2, double epsilon);
// The same with a learning rate from the host.
void apply_adam_multi_in_place(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                               double learning_rate, double beta_1, double beta_2, double epsilon);

// A fused multi-variable update's operands, for an optimizer that records it in a traced function
// (graph::update_variables): the op's inputs are the `updated` tensors, whose buffers its outputs are (one output
// each, in order), then `inputs`.
struct UpdateOperands {
  std::vector<Tensor> updated, inputs;
  std::vector<OutputSpec> outputs;
};

// apply_adam_multi's operands for `slots`, checked as apply_adam_multi_in_place checks them: updated, each
// variable's value, momentum and velocity; inputs, each gradient as the triple (gradient, a, b), then the step,
// the condition and the learning rate.
UpdateOperands adam_multi_operands(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                                   const Tensor& learning_rate);

// One variable of apply_sgd_multi_in_place: its value and momentum (undefined without momentum), updated in
// place, and its gradient.
struct SgdSlots {
  Tensor variable, momentum, gradient;
};

// Keras's SGD step (functors::SgdStep) over several variables in one pass, in place, where `condition` (0-d bool,
// on the host or the device) is true, with `learning_rate` (0-d float32 or float64, on the host or the device)
// rounded to the variables' dtype. `momentum` 0 means no momentum slots; otherwise every slot has one. The dtype
// and device rules and the bits are apply_adam_multi_in_place's (the SGD ops', element for element).
void apply_sgd_multi_in_place(const std::vector<SgdSlots>& slots, const Tensor& condition, const Tensor& learning_rate,
                              double momentum, bool nesterov);
// The same with a learning rate from the host.
void apply_sgd_multi_in_place(const std::vector<SgdSlots>& slots, const Tensor& condition, double learning_rate,
                              double momentum, bool nesterov);
// apply_sgd_multi's operands, checked as apply_sgd_multi_in_place checks them: updated, each variable's value
// and momentum (without momentum, its value alone); inputs, the gradients, then the condition and the learning
// rate.
UpdateOperands sgd_multi_operands(const std::vector<SgdSlots>& slots, const Tensor& condition,
                                  const Tensor& learning_rate, double momentum);

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

struct UnscaledGradients {
  std::vector<Tensor> gradients;  // each gradient divided by the loss scale: float32, or float64 for float64
  Tensor finite;                  // 0-d bool: every element of every gradient finite
};

// Dynamic loss scaling's pass over a step's gradients (PyTorch's _amp_foreach_non_finite_check_and_unscale_): each
// gradient (float16, bfloat16, float32 or float64) widened exactly to float32 (float64 stays float64) and divided
// by `scale` (the 0-d float32 loss scale, widened for float64; ops::div's values), and one flag saying whether
// every element of every gradient is finite. All on one device; one op for the step instead of a cast, a division
// and a check per gradient.
UnscaledGradients unscale_gradients(const std::vector<Tensor>& gradients, const Tensor& scale);

struct LossScaleUpdate {
  Tensor scale, counter;  // the next loss scale (0-d float32) and growth counter (0-d int64)
};

// Dynamic loss scaling's update after a step (Keras's LossScaleOptimizer): where `finite` (0-d bool), the counter
// plus one, or, reaching growth_steps, the scale doubled and the counter 0; otherwise the scale halved and the
// counter 0. One op where the equal, where and arithmetic ops were ten.
LossScaleUpdate update_loss_scale(const Tensor& scale, const Tensor& counter, const Tensor& finite,
                                  int64_t growth_steps);

}  // namespace ember::ops
