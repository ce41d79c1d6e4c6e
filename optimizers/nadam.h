#pragma once
// Nadam (Keras: keras.optimizers.Nadam): Adam with Nesterov momentum and Dozat's momentum schedule.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct NadamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "nadam", "nadam_1", ...
};

// u_t = beta_1 * (1 - 0.5 * 0.96^t); the product of all u so far is a variable (Keras 3's u_product,
// updated once per step before the variables); m and v as Adam; w -= lr * m_hat / (sqrt(v_hat) + eps) with
// m_hat = u_{t+1} m / (1 - prod u_{t+1}) + (1 - u_t) g / (1 - prod u_t), v_hat = v / (1 - beta_2^t).
class Nadam : public Optimizer {
  EMBER_OPTIMIZER(Nadam)
 public:
  explicit Nadam(NadamOptions options = {});
  nlohmann::json get_config() const override;
  static Nadam from_config(const nlohmann::json& config);

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void before_update_steps(double learning_rate) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double beta_1_, beta_2_, epsilon_;
  std::vector<Variable> momentums_, velocities_;
  Variable u_product_;
  double u_product_value_ = 1;  // u_product_ after this step's update: the value of u_product_seen_
  Tensor u_product_seen_;
};

}  // namespace ember::optimizers
