#pragma once
// LossScaleOptimizer (Keras 3: keras.optimizers.LossScaleOptimizer, also keras.mixed_precision's): wraps
// another optimizer and scales the loss so that float16 gradients do not underflow. Dynamic mode (the
// default): a step whose gradients are all finite is unscaled and applied by the inner optimizer, and
// every `dynamic_growth_steps`-th consecutive finite step doubles the scale; a step with any inf or nan is
// skipped (the inner optimizer's slots and iteration count untouched) and halves the scale. Fixed mode
// (tf-keras's dynamic=False) keeps `initial_scale` and always applies.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "optimizers/optimizer.h"

namespace ember::optimizers {

struct LossScaleOptimizerOptions {
  bool dynamic = true;
  double initial_scale = 32768.0;  // 2^15
  int64_t dynamic_growth_steps = 2000;
  std::string name{};  // empty: "loss_scale_optimizer", "loss_scale_optimizer_1", ...
};

class LossScaleOptimizer : public Optimizer {
  EMBER_OPTIMIZER(LossScaleOptimizer)
 public:
  // Takes an optimizer temporary (`LossScaleOptimizer(optimizers::Adam())`) or a shared one.
  template <class O>
    requires std::is_base_of_v<Optimizer, std::remove_cvref_t<O>> && (!std::is_lvalue_reference_v<O>)
  explicit LossScaleOptimizer(O&& inner, LossScaleOptimizerOptions options = {})
      : LossScaleOptimizer(std::move(inner).move_to_shared(), std::move(options)) {}
  explicit LossScaleOptimizer(OptimizerPtr inner, LossScaleOptimizerOptions options = {});

  const OptimizerPtr& inner_optimizer() const { return inner_; }
  bool dynamic() const { return dynamic_; }
  double initial_scale() const { return initial_scale_; }
  int64_t dynamic_growth_steps() const { return growth_steps_; }
  // The loss scale now (initial_scale before the first step builds the optimizer).
  double dynamic_scale() const;
  // Consecutive finite steps since the scale last changed.
  int64_t step_counter() const;

  // loss * the current scale (Keras 3: scale_loss; tf-keras: get_scaled_loss).
  Tensor scale_loss(const Tensor& loss) const override;
  Tensor get_scaled_loss(const Tensor& loss) const { return scale_loss(loss); }
  // Each defined gradient divided by the current scale, for custom loops that apply through the inner
  // optimizer (tf-keras: get_unscaled_gradients).
  std::vector<Tensor> get_unscaled_gradients(const std::vector<Tensor>& grads) const;

  // Builds, checks the gradients and applies or skips as described above. Inside strategy.run it first sums the
  // (scaled) gradients over the replicas, as the base's apply does (TF's all-reduce SUM), so that every replica
  // checks the same gradients and skips the same steps; the inner optimizer then applies the sum as it is.
  void apply(const std::vector<Tensor>& grads, const std::vector<Variable>& vars) override;
  void apply(const std::vector<Tensor>& grads) override;
  // Multiplies factored gradients out: the finiteness check and the unscaling see them whole.
  void apply_factored(const std::vector<SourceGradient>& grads, const std::vector<Variable>& vars) override;
  void build(const std::vector<Variable>& vars) override;
  bool built() const override;

  // The inner optimizer's counter and learning rate (Keras forwards them).
  const Variable& iterations() const override { return inner_->iterations(); }
  double learning_rate() const override { return inner_->learning_rate(); }
  void set_learning_rate(double learning_rate) override { inner_->set_learning_rate(learning_rate); }
  const schedules::SchedulePtr& learning_rate_schedule() const override { return inner_->learning_rate_schedule(); }
  // Keras 3's order: own iteration and learning_rate (both unused), step_counter, dynamic_scale, then
  // the inner optimizer's variables.
  std::vector<Variable> variables() const override;
  void set_weights(const std::vector<Tensor>& values) override;
  void finalize_variable_values(const std::vector<Variable>& vars) override { inner_->finalize_variable_values(vars); }

  // {name, inner_optimizer (serialized), initial_scale, dynamic_growth_steps} (+ "dynamic": false in fixed mode).
  nlohmann::json get_config() const override;
  static LossScaleOptimizer from_config(const nlohmann::json& config);

 protected:
  // step_counter and dynamic_scale (Keras: build).
  void build_slots(const std::vector<Variable>& vars) override;
  // Never reached: apply hands the update to the inner optimizer.
  void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) override;

 private:
  // The current scale as a 0-d tensor of t's dtype on t's device (the variable's value, cast when not
  // float32; before build, initial_scale as a host scalar).
  Tensor scale_for(const Tensor& t) const;
  // The built optimizer's float32 scale variable's value on `device`.
  Tensor scale_on(Device device) const;
  // Builds on `vars` when not built, then checks and applies (or skips) gradients already merged over the replicas.
  // Both apply overloads: the gradients merged across replicas, then apply_checked, as one traced node while a
  // function traces (its closure keeps its own copy of vars: the graph outlives the call).
  void apply_merged(const std::vector<Tensor>& grads, std::optional<std::vector<Variable>> vars);
  void apply_checked(const std::vector<Tensor>& grads, const std::vector<Variable>* vars);

  OptimizerPtr inner_;
  bool dynamic_;
  double initial_scale_;
  int64_t growth_steps_;
  Variable step_counter_, dynamic_scale_;
};

}  // namespace ember::optimizers

namespace ember::mixed_precision {
using optimizers::LossScaleOptimizer;
using optimizers::LossScaleOptimizerOptions;
}  // namespace ember::mixed_precision
