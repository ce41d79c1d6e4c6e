#pragma once
// SGD (Keras: keras.optimizers.SGD): gradient descent, optionally with (Nesterov) momentum.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct SGDOptions {
  LearningRate learning_rate = 0.01;
  double momentum = 0.0;  // in [0, 1]; 0 is plain gradient descent (no slot)
  bool nesterov = false;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "sgd", "sgd_1", ...
};

// w -= lr * g; with momentum m = momentum * m - lr * g, then w += m (Nesterov: w += momentum * m - lr * g).
class SGD : public Optimizer {
  EMBER_OPTIMIZER(SGD)
 public:
  explicit SGD(SGDOptions options = {});
  nlohmann::json get_config() const override;
  static SGD from_config(const nlohmann::json& config);
  double momentum() const { return momentum_; }
  bool nesterov() const { return nesterov_; }

 protected:
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;
  // One apply_sgd_multi pass over all variables: float32/float64, one device and dtype, and every variable and
  // momentum held by nothing else (updated in place). The step count is not needed.
  bool fuses_update_steps(const std::vector<Tensor>& grads, const std::vector<size_t>& indices) override;
  void update_steps_fused(const std::vector<Tensor>& grads, const std::vector<size_t>& indices, double learning_rate,
                          const Tensor& step, const Tensor& condition) override;
  // apply_sgd_multi as the graph's update: float32/float64, one device and dtype.
  bool can_update_in_graph(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices) override;
  void update_in_graph(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices, const Tensor& step,
                       const Tensor& learning_rate) override;

 private:
  double momentum_;
  bool nesterov_;
  std::vector<Variable> momentums_;
};

}  // namespace ember::optimizers
