#pragma once
// ScheduleFreeAdamW (Keras: keras.optimizers.ScheduleFreeAdamW): Schedule-Free AdamW (Defazio et al., 2024),
// which interpolates between an SGD-like sequence and its running average instead of decaying the rate.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct ScheduleFreeAdamWOptions {
  LearningRate learning_rate = 0.0025;
  double beta_1 = 0.9;   // the interpolation between the momentum sequence and its average
  double beta_2 = 0.999;
  double epsilon = 1e-8;
  int64_t warmup_steps = 0;  // > 0: the rate ramps up as lr * min(t / warmup_steps, 1)
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "schedule_free_adam_w", "schedule_free_adam_w_1", ... (Keras's snake_case)
};

// The model variable holds y; the "momentum" slot holds z (starting at the variable's value); x is implied.
// t = iterations + 1, lr_t = lr * min(t / warmup_steps, 1) (lr without warmup);
//   v += (g^2 - v)(1 - beta_2);  z -= lr_t g / (sqrt(v / (1 - beta_2^t)) + epsilon);
//   x = (y - (1 - beta_1) z) / beta_1;  x = (1 - 1/t) x + z / t;  y = (1 - beta_1) z + beta_1 x.
// As Keras 3.15.1 on TensorFlow, x is recovered from the momentum already updated this step (its
// `momentum_old` is the variable itself, read after the update), not the paper's z before the update; and
// the model is trained and evaluated at y (Keras has no swap to x for evaluation, and fit does nothing
// special for this optimizer).
class ScheduleFreeAdamW : public Optimizer {
  EMBER_OPTIMIZER(ScheduleFreeAdamW)
 public:
  explicit ScheduleFreeAdamW(ScheduleFreeAdamWOptions options = {});
  nlohmann::json get_config() const override;
  static ScheduleFreeAdamW from_config(const nlohmann::json& config);

 protected:
  // "momentum" (a copy of the variable) and "velocity" (zeros), interleaved per variable.
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  int64_t warmup_steps_;
  std::vector<Variable> momentums_, velocities_;
};

}  // namespace ember::optimizers
