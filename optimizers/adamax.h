#pragma once
// Adamax (Keras: keras.optimizers.Adamax): Adam with the infinity norm in place of the second moment.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct AdamaxOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "adamax", "adamax_1", ...
};

// m += (g - m) * (1 - beta_1); u = max(beta_2 * u, |g|); w -= lr * m / ((1 - beta_1^t) * (u + epsilon)).
class Adamax : public Optimizer {
  EMBER_OPTIMIZER(Adamax)
 public:
  explicit Adamax(AdamaxOptions options = {});
  nlohmann::json get_config() const override;
  static Adamax from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  std::vector<Variable> m_, u_;
};

}  // namespace ember::optimizers
