#pragma once
// Ftrl (Keras: keras.optimizers.Ftrl): Follow The Regularized Leader (McMahan et al., 2013), with online
// L1/L2 and shrinkage-type L2 regularization.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct FtrlOptions {
  LearningRate learning_rate = 0.001;
  double learning_rate_power = -0.5;                 // <= 0; 0 is a fixed learning rate
  double initial_accumulator_value = 0.1;            // >= 0
  double l1_regularization_strength = 0.0;           // >= 0
  double l2_regularization_strength = 0.0;           // >= 0
  double l2_shrinkage_regularization_strength = 0.0;  // >= 0: an L2 penalty on the loss (magnitude)
  double beta = 0.0;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "ftrl", "ftrl_1", ...
};

// With p = -learning_rate_power, g' = g + 2 * l2_shrinkage * w and n' = n + g^2 (n starts at
// initial_accumulator_value): z += g' - (n'^p - n^p) / lr * w;
// w = (clip(z, -l1, l1) - z) / (n'^p / lr + 2 * (l2 + beta / (2 * lr))); n = n'.
class Ftrl : public Optimizer {
  EMBER_OPTIMIZER(Ftrl)
 public:
  explicit Ftrl(FtrlOptions options = {});
  nlohmann::json get_config() const override;
  static Ftrl from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double learning_rate_power_, initial_accumulator_value_, l1_, l2_, l2_shrinkage_, beta_;
  std::vector<Variable> accumulators_, linears_;
};

}  // namespace ember::optimizers
