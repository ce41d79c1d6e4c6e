#pragma once
// Adafactor (Keras: keras.optimizers.Adafactor): Adam-like steps whose second moment of a matrix is kept
// factored as row and column averages (Shazeer & Stern, 2018), with update clipping and a
// parameter-scaled step size.
#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct AdafactorOptions {
  LearningRate learning_rate = 0.001;
  double beta_2_decay = -0.8;   // beta_2 at step t is 1 - t^beta_2_decay
  double epsilon_1 = 1e-30;     // added to g^2
  double epsilon_2 = 1e-3;      // floor of the variable's RMS in the step size
  double clip_threshold = 1.0;  // the update's RMS is clipped to it (independent of clipnorm & co)
  // With a fixed learning rate, lr = min(lr, 1 / sqrt(t)). (Keras applies the same minimum to the step
  // size whatever this says, so it changes no result; it is kept for the config.)
  bool relative_step = true;
  std::optional<double> weight_decay{};
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "adafactor", "adafactor_1", ...
};

// t = step + 1, beta_2_t = 1 - t^beta_2_decay, G = g^2 + epsilon_1. A variable of rank >= 2 keeps
// r = EMA of mean(G, -1) and c = EMA of mean(G, -2) (decay beta_2_t) and v = (r / mean(r, -1))[..., None] *
// c[..., None, :]; a lower rank keeps v = EMA of G. u = g / sqrt(v); u /= max(1, rms(u) / clip_threshold);
// w -= max(epsilon_2, rms(w)) * min(lr, 1 / sqrt(t)) * u.
class Adafactor : public Optimizer {
  EMBER_OPTIMIZER(Adafactor)
 public:
  explicit Adafactor(AdafactorOptions options = {});
  nlohmann::json get_config() const override;
  static Adafactor from_config(const nlohmann::json& config);

 protected:
  // Per variable, as Keras: r, c (named after the variable's own name, "<optimizer>/kernel"; for a variable
  // of rank < 2 both are int32 scalar placeholders that Keras keeps in its variables and checkpoints too),
  // then "velocity".
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  double beta_2_decay_, epsilon_1_, epsilon_2_, clip_threshold_;
  bool relative_step_;
  std::vector<Variable> r_, c_, v_;
};

}  // namespace ember::optimizers
