#pragma once
// Adadelta (Keras: keras.optimizers.Adadelta): step sizes from moving averages of squared gradients
// and of squared updates.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct AdadeltaOptions {
  LearningRate learning_rate = 0.001;
  double rho = 0.95;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "adadelta", "adadelta_1", ...
};

// a = rho * a + (1 - rho) * g^2; delta = -sqrt(d + eps) * g / sqrt(a + eps);
// d = rho * d + (1 - rho) * delta^2; w += lr * delta.
class Adadelta : public Optimizer {
  EMBER_OPTIMIZER(Adadelta)
 public:
  explicit Adadelta(AdadeltaOptions options = {});
  nlohmann::json get_config() const override;
  static Adadelta from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double rho_, epsilon_;
  std::vector<Variable> accumulated_grads_, accumulated_delta_vars_;
};

}  // namespace ember::optimizers
