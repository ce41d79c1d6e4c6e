#pragma once
// AdamW (Keras: keras.optimizers.AdamW): Adam with decoupled weight decay on by default (Keras 3 applies
// the decay in the optimizer base, so AdamW is Adam with weight_decay = 0.004).
#include "optimizers/adam.h"

namespace ember::optimizers {

// Keras's argument order: weight_decay comes second.
struct AdamWOptions {
  LearningRate learning_rate = 0.001;
  std::optional<double> weight_decay = 0.004;  // required (InvalidArgument when unset)
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  bool amsgrad = false;
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "adam_w", "adam_w_1", ... (Keras's snake_case of AdamW)
};

// Each step first decays w -= w * weight_decay * lr, then takes Adam's step.
class AdamW : public Adam {
  EMBER_OPTIMIZER(AdamW)
 public:
  explicit AdamW(AdamWOptions options = {});
  static AdamW from_config(const nlohmann::json& config);

 private:
  static AdamOptions to_adam(const AdamWOptions& o);
};

}  // namespace ember::optimizers
