#pragma once
// RMSprop (Keras: keras.optimizers.RMSprop): divides by a moving average of squared gradients,
// optionally centered and with momentum.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct RMSpropOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;  // > 0 adds a momentum slot
  double epsilon = 1e-7;
  bool centered = false;  // subtract the squared moving average of gradients (a variance estimate)
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "rm_sprop", "rm_sprop_1", ... (Keras's snake_case of RMSprop)
};

// v = rho * v + (1 - rho) * g^2; (centered: a = rho * a + (1 - rho) * g, denominator v - a^2 + eps, else
// v + eps); increment = lr * g / sqrt(denominator); momentum: m = momentum * m + increment, w -= m;
// else w -= increment.
class RMSprop : public Optimizer {
  EMBER_OPTIMIZER(RMSprop)
 public:
  explicit RMSprop(RMSpropOptions options = {});
  nlohmann::json get_config() const override;
  static RMSprop from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double rho_, momentum_, epsilon_;
  bool centered_;
  std::vector<Variable> velocities_, momentums_, average_gradients_;
};

}  // namespace ember::optimizers
