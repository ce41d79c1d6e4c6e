#pragma once
// Lamb (Keras: keras.optimizers.Lamb): Adam's step scaled per variable by ||w|| / ||step|| (layer-wise
// adaptive moments, You et al., 2019).
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct LambOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "lamb", "lamb_1", ...
};

// m += (g - m)(1 - beta_1); v += (g^2 - v)(1 - beta_2); u = (m / (1 - beta_1^t)) / (sqrt(v / (1 - beta_2^t))
// + epsilon); w -= r * lr * u with r = ||w|| / ||u|| when both norms are > 0, else 1.
class Lamb : public Optimizer {
  EMBER_OPTIMIZER(Lamb)
 public:
  explicit Lamb(LambOptions options = {});
  nlohmann::json get_config() const override;
  static Lamb from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  std::vector<Variable> momentums_, velocities_;
};

}  // namespace ember::optimizers
