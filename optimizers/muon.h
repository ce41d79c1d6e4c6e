#pragma once
// Muon (Keras: keras.optimizers.Muon): momentum orthogonalised by a Newton-Schulz iteration for 2-D
// variables (Jordan et al., 2024; Moonlight's RMS matching, Liu et al., 2025), and an AdamW step for the
// rest (other ranks, embeddings, the layers named in exclude_layers).
#include <optional>
#include <string>
#include <vector>

#include "optimizers/optimizer.h"

namespace ember::optimizers {

// Keras's argument order (name comes before Muon's own options).
struct MuonOptions {
  LearningRate learning_rate = 0.001;
  double adam_beta_1 = 0.9;
  double adam_beta_2 = 0.999;
  std::optional<double> adam_weight_decay = 0.004;  // the AdamW path's decoupled decay (none: no decay there)
  double epsilon = 1e-7;                            // the AdamW path's epsilon
  std::optional<double> weight_decay = 0.004;       // the Muon path's decoupled decay (none: no decay there)
  EMBER_OPTIMIZER_SHARED_OPTIONS  // clipnorm ... gradient_accumulation_steps
  std::string name{};  // empty: "muon", "muon_1", ...
  // Regular expressions searched (re.search) in each variable's path ("dense/kernel"): a match takes AdamW.
  std::vector<std::string> exclude_layers{};
  bool exclude_embeddings = true;  // a path containing "embedding" (any case) takes AdamW
  double muon_a = 3.4445;          // the quintic Newton-Schulz coefficients
  double muon_b = -4.7750;
  double muon_c = 2.0315;
  double adam_lr_ratio = 1;  // the AdamW path's learning rate is lr * adam_lr_ratio
  double momentum = 0.95;
  int64_t ns_steps = 5;  // Newton-Schulz iterations
  bool nesterov = true;
  std::optional<double> rms_rate = 0.2;  // scales the update by sqrt(max(rows, cols)) * rms_rate; none: unscaled
};

// A variable takes the AdamW path when its rank is not 2, when exclude_embeddings and its path contains
// "embedding" (case-insensitive), or when an exclude_layers pattern matches its path; otherwise the Muon path:
//   m += g + m (momentum - 1);  x = nesterov ? g + momentum m : m;
//   x = x / (||x||_F + 1e-7) (transposed first when rows > cols), then ns_steps times
//   A = x x^T; B = b A + (c A) A; x = a x + B x (transposed back);
//   w -= lr x sqrt(max(rows, cols)) rms_rate (without the last two factors when rms_rate is none).
// The AdamW path is Adam's step (no AMSGrad) with adam_beta_1/2, epsilon and lr * adam_lr_ratio. Weight decay
// (w -= w wd lr, the unscaled lr) uses weight_decay on the Muon path and adam_weight_decay on the AdamW path.
//
// Where Keras 3.15.1 (TensorFlow backend) goes its own way, this follows it: exclude_from_weight_decay's
// patterns are searched in the variable's own name ("kernel" of "dense/kernel"), not its path as the other
// optimizers do. Ember's variable paths are "<layer>/<weight>", where a Keras model's are
// "<model>/<layer>/<weight>" ("sequential/dense/kernel"): a model name containing "embedding", or an
// exclude_layers pattern that matches the model name or anchors at the start, decides differently here.
// A float64 variable on the Muon path runs here (the learning rate and sqrt(max(rows, cols)) are float32
// numbers widened, as Keras's type promotion gives them); Keras's TF backend fails there (float32 meets
// float64 in tf.multiply).
class Muon : public Optimizer {
  EMBER_OPTIMIZER(Muon)
 public:
  explicit Muon(MuonOptions options = {});
  nlohmann::json get_config() const override;
  static Muon from_config(const nlohmann::json& config);

  // Whether `variable` takes the AdamW path (Keras: _should_use_adamw). InvalidArgument for an
  // exclude_layers entry that is not a regular expression.
  bool should_use_adamw(const Variable& variable) const;

 protected:
  // Per variable, in order: "momentum", then "velocity" on the AdamW path only.
  void build_slots(const std::vector<Variable>& vars) override;
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;
  std::optional<double> weight_decay_for(size_t index) override;

 private:
  void muon_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate);
  void adamw_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate);
  // Keras's zeropower_via_newtonschulz5 for a 2-D x.
  Tensor newton_schulz(const Tensor& x) const;

  MuonOptions o_;  // Muon's own options (the shared ones live in the base)
  std::vector<bool> adamw_;
  std::vector<Variable> momentums_, velocities_;  // velocities_[i] undefined on the Muon path
};

}  // namespace ember::optimizers
