#pragma once
// Adam (Keras: keras.optimizers.Adam): adaptive first and second moment estimates, optional AMSGrad.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct AdamOptions {
  LearningRate learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;  // added to sqrt(v) without bias correction, as Keras does (not PyTorch's form)
  bool amsgrad = false;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "adam", "adam_1", ...
};

// t = iterations + 1; alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t); m += (g - m) * (1 - beta_1);
// v += (g^2 - v) * (1 - beta_2); (AMSGrad: v_hat = max(v_hat, v), used for v); w -= m * alpha / (sqrt(v) + epsilon).
class Adam : public Optimizer {
  EMBER_OPTIMIZER(Adam)
 public:
  explicit Adam(AdamOptions options = {});
  nlohmann::json get_config() const override;
  static Adam from_config(const nlohmann::json& config);

 protected:
  // For AdamW: names the optimizer after class_name.
  Adam(const std::string& class_name, AdamOptions options);
  static AdamOptions options_from_config(const nlohmann::json& config, const std::string& class_name);
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;
  void update_step_factored(const Tensor& a, const Tensor& b, Variable& variable, size_t index,
                            double learning_rate) override;
  // One apply_adam_multi pass over all variables: float32/float64, one device and dtype, no AMSGrad, and every
  // variable and slot held by nothing else (updated in place).
  bool fuses_update_steps(const std::vector<Tensor>& grads, const std::vector<size_t>& indices) override;
  void update_steps_fused(const std::vector<Tensor>& grads, const std::vector<size_t>& indices, double learning_rate,
                          const Tensor& step, const Tensor& condition) override;
  // apply_adam_multi as the graph's update: float32/float64, one device and dtype, no AMSGrad.
  bool can_update_in_graph(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices) override;
  void update_in_graph(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices, const Tensor& step,
                       const Tensor& learning_rate) override;

 private:
  // The step size with Keras's bias correction, lr sqrt(1 - beta_2^t) / (1 - beta_1^t), in dt's rounding.
  double alpha(DType dt, double learning_rate) const;
  double beta_1_, beta_2_, epsilon_;
  bool amsgrad_;
  std::vector<Variable> momentums_, velocities_, velocity_hats_;
};

}  // namespace ember::optimizers
