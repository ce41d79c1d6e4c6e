#pragma once
// Adagrad (Keras: keras.optimizers.Adagrad): per-element rates from the sum of squared gradients.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct AdagradOptions {
  LearningRate learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "adagrad", "adagrad_1", ...
};

// acc += g^2 (acc starts at initial_accumulator_value); w -= lr * g / sqrt(acc + epsilon).
class Adagrad : public Optimizer {
  EMBER_OPTIMIZER(Adagrad)
 public:
  explicit Adagrad(AdagradOptions options = {});
  nlohmann::json get_config() const override;
  static Adagrad from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double initial_accumulator_value_, epsilon_;
  std::vector<Variable> accumulators_;
};

}  // namespace ember::optimizers
