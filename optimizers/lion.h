#pragma once
// Lion (Keras: keras.optimizers.Lion): sign-of-momentum updates (Chen et al., 2023).
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct LionOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;   // in (0, 1]
  double beta_2 = 0.99;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "lion", "lion_1", ...
};

// w -= lr * sign(beta_1 * m + (1 - beta_1) * g); then m = beta_2 * m + (1 - beta_2) * g.
class Lion : public Optimizer {
  EMBER_OPTIMIZER(Lion)
 public:
  explicit Lion(LionOptions options = {});
  nlohmann::json get_config() const override;
  static Lion from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double beta_1_, beta_2_;
  std::vector<Variable> momentums_;
};

}  // namespace ember::optimizers
