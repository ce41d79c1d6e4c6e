#pragma once
// Optimizer (Keras 3: keras.optimizers.Optimizer): the base owns apply, gradient filtering, loss-scale
// unscaling, clipping, decoupled weight decay, EMA, the iteration counter, the learning rate and the
// slot variables; a subclass is build_slots + update_step (Keras's build + update_step).
#include <functional>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/autodiff/gradient_tape.h"
#include "framework/autodiff/variable.h"
#include "framework/core/tensor.h"
#include "framework/ops/op.h"
#include "optimizers/name_pattern.h"
#include "optimizers/schedules.h"

namespace ember::optimizers {

// One variable's gradient as apply_factored takes it: a tensor, or the two factors of the single product that
// makes it, matmul(a, b, {.transpose_a = true}) with a (k, m) and b (k, n) for k at most ops::kFactoredMaxRows,
// left unmultiplied so that the update can fold the product in. The graph compiler hands a traced step's small-
// batch Dense kernel gradients over so (framework/graph/fold_kernel_gradients.cpp).
struct SourceGradient {
  Tensor value;  // the gradient, when not factored
  Tensor a, b;   // its factors, when factored
  bool factored() const { return a.defined(); }
  bool defined() const { return value.defined() || factored(); }
  // The gradient as one tensor: value, or the product (matmul's bits).
  Tensor materialize() const;
};

// The options every optimizer shares after weight_decay, in Keras's order, declared once here and spliced
// into each optimizer's options struct (flat, so that designated initializers read as Keras's keywords):
//   clipnorm: clip each gradient to this L2 norm;
//   clipvalue: clip each gradient element to [-clipvalue, clipvalue];
//   global_clipnorm: clip all gradients together to this global L2 norm;
//   use_ema, ema_momentum: keep an exponential moving average of the variables;
//   ema_overwrite_frequency: every N steps copy the averages into the variables;
//   loss_scale_factor: gradients are divided by it (see scale_loss);
//   gradient_accumulation_steps: >= 2 sums the gradients of this many apply calls and updates with their
//     mean on the last of them (the iteration counter still counts every call; Keras's `iterations` is the
//     count of updates).
#define EMBER_OPTIMIZER_SHARED_OPTIONS                  \
  std::optional<double> clipnorm{};                     \
  std::optional<double> clipvalue{};                    \
  std::optional<double> global_clipnorm{};              \
  bool use_ema = false;                                 \
  double ema_momentum = 0.99;                           \
  std::optional<int64_t> ema_overwrite_frequency{};     \
  std::optional<double> loss_scale_factor{};            \
  std::optional<int64_t> gradient_accumulation_steps{};

// The options every optimizer takes. Each optimizer's own options struct starts with learning_rate and its
// hyperparameters, then weight_decay, EMBER_OPTIMIZER_SHARED_OPTIONS and name (Keras's order).
struct OptimizerOptions {
  LearningRate learning_rate = 0.001;
  std::optional<double> weight_decay{};  // decoupled: var -= var * weight_decay * lr before the update
  EMBER_OPTIMIZER_SHARED_OPTIONS
  std::string name{};  // empty: snake_case of the class ("adam", "adam_1", ...)
};

// The shared fields of any optimizer's options struct.
template <class O>
OptimizerOptions base_options(const O& o) {
  return {o.learning_rate,     o.weight_decay,      o.clipnorm,
          o.clipvalue,         o.global_clipnorm,   o.use_ema,
          o.ema_momentum,      o.ema_overwrite_frequency, o.loss_scale_factor,
          o.gradient_accumulation_steps, o.name};
}

// Copies shared fields into any optimizer's options struct (the reverse of base_options).
template <class O>
void set_base_options(O& o, const OptimizerOptions& b) {
  o.learning_rate = b.learning_rate;
  o.weight_decay = b.weight_decay;
  o.clipnorm = b.clipnorm;
  o.clipvalue = b.clipvalue;
  o.global_clipnorm = b.global_clipnorm;
  o.use_ema = b.use_ema;
  o.ema_momentum = b.ema_momentum;
  o.ema_overwrite_frequency = b.ema_overwrite_frequency;
  o.loss_scale_factor = b.loss_scale_factor;
  o.gradient_accumulation_steps = b.gradient_accumulation_steps;
  o.name = b.name;
}

// Reads the shared options from a Keras optimizer config (learning_rate a number or a serialized
// schedule) over `defaults` (the class's own, for keys the config leaves out), checking that every key
// is a shared one or in `own_keys` (InvalidArgument otherwise).
OptimizerOptions base_options_from_config(const nlohmann::json& config, const std::string& class_name,
                                          std::initializer_list<const char*> own_keys,
                                          const OptimizerOptions& defaults);

class Optimizer;
using OptimizerPtr = std::shared_ptr<Optimizer>;

// Declares an optimizer class's Keras class name and lets a temporary of it be moved into shared
// ownership (how `compile({.optimizer = optimizers::Adam()})` keeps it). Put it in every optimizer class.
#define EMBER_OPTIMIZER(ClassName)                                                         \
 public:                                                                                   \
  std::string class_name() const override { return #ClassName; }                          \
  ::ember::optimizers::OptimizerPtr move_to_shared() && override {                         \
    return std::make_shared<ClassName>(std::move(*this));                                  \
  }                                                                                        \
                                                                                           \
 public:

class Optimizer {
 public:
  virtual ~Optimizer();
  Optimizer(const Optimizer&) = delete;  // two optimizers must not share slot variables
  Optimizer& operator=(const Optimizer&) = delete;
  Optimizer(Optimizer&&) noexcept;
  Optimizer& operator=(Optimizer&&) = delete;

  // --- applying gradients ---
  // (apply, build, the state accessors, finalize_variable_values and scale_loss are virtual so that a
  // wrapper such as mixed_precision::LossScaleOptimizer can forward them to the optimizer it wraps.)
  // One update: builds on the first call, skips undefined gradients (as Keras skips None), then
  // unscales, clips, applies weight decay, runs update_step per variable, updates the EMA and
  // increments iterations. Runs outside every tape. A variable the optimizer was not built with, a
  // count or shape mismatch, or no defined gradient at all is InvalidArgument, before any update.
  void apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars);
  virtual void apply(const std::vector<Tensor>& grads, const std::vector<Variable>& vars);
  // Gradients for the variables the optimizer was built with, in that order.
  virtual void apply(const std::vector<Tensor>& grads);
  // apply() for gradients some of which may be factored (see SourceGradient): a factored gradient goes
  // into update_step_factored as its factors when nothing has to see it whole first (no loss_scale_factor, no
  // clipping) and it has the variable's dtype, and is multiplied out otherwise. The result is apply()'s with
  // every gradient multiplied out, bit for bit.
  virtual void apply_factored(const std::vector<SourceGradient>& grads, const std::vector<Variable>& vars);
  // apply(grads, *vars) (vars null: apply(grads)) when `condition`, a 0-d bool tensor, is true; otherwise
  // nothing changes, iterations included (how LossScaleOptimizer skips a step with non-finite gradients).
  // Where the update fuses (fuses_update_steps) and needs no host step count (no schedule, EMA, gradient
  // accumulation, clipping or loss_scale_factor), the condition gates the update on its device and is never
  // read on the host, so a GPU step need not wait; otherwise it is read first. Not inside a traced function.
  void apply_if(const Tensor& condition, const std::vector<Tensor>& grads, const std::vector<Variable>* vars = nullptr);
  // Creates the slot variables for `vars` (once; later calls do nothing).
  virtual void build(const std::vector<Variable>& vars);
  virtual bool built() const { return built_; }

  // --- state ---
  const std::string& name() const { return name_; }
  // Keras class name ("Adam"); EMBER_OPTIMIZER defines it.
  virtual std::string class_name() const = 0;
  // Moves this object into a new shared_ptr (EMBER_OPTIMIZER defines it).
  virtual OptimizerPtr move_to_shared() && = 0;
  // The step counter: an int64 scalar, non-trainable, named "<name>/iteration", counting apply calls
  // (Keras's `_iterations`, the variable checkpoints hold; with gradient_accumulation_steps Keras's
  // `iterations` property is this divided by the steps).
  virtual const Variable& iterations() const { return iterations_; }
  // The learning rate now: the schedule at iterations(), else the float32 variable's value.
  virtual double learning_rate() const;
  // Sets the fixed learning rate (FailedPrecondition when it is a schedule, as Keras refuses).
  virtual void set_learning_rate(double learning_rate);
  // The schedule, or null when the learning rate is a number.
  virtual const schedules::SchedulePtr& learning_rate_schedule() const { return schedule_; }
  // Every optimizer variable in Keras 3 order (its checkpoint order): iteration, learning_rate (unless
  // a schedule), EMA averages, then the subclass's slots ("<name>/<var>_<slot>").
  virtual std::vector<Variable> variables() const { return variables_; }
  // Assigns values to variables() in order; count, shape and dtype must match.
  virtual void set_weights(const std::vector<Tensor>& values);

  // Variables whose name contains a match of one of these regular expressions (the TF backend
  // matches the full variable path, e.g. "dense/bias") get no weight decay.
  void exclude_from_weight_decay(const std::vector<std::string>& var_names);
  // Those variables, plus names as above, get no weight decay.
  void exclude_from_weight_decay(const std::vector<Variable>& var_list, const std::vector<std::string>& var_names = {});

  // With use_ema, copies the moving averages into `vars` (the variables built with); fit calls it at
  // the end of training. Without use_ema it does nothing.
  virtual void finalize_variable_values(const std::vector<Variable>& vars);
  // loss * loss_scale_factor when set, else loss (Keras: optimizer.scale_loss).
  virtual Tensor scale_loss(const Tensor& loss) const;
  // Sets or clears loss_scale_factor (Keras: the assignable `optimizer.loss_scale_factor`).
  void set_loss_scale_factor(std::optional<double> factor) { options_.loss_scale_factor = factor; }

  // Keras config: name, learning_rate (a number or a serialized schedule), the shared options, then
  // the subclass's hyperparameters.
  virtual nlohmann::json get_config() const;

 protected:
  // While a function is traced: records `run`, called with `grads` (undefined ones included), as one node of the
  // graph that runs it again eagerly on every call (the step count, the schedule and the loss scale live on the
  // host), and returns true. Returns false when no function is traced. gradient_triples: grads are apply_factored's
  // (value, a, b) parts, which the graph compiler may factor further. widens_half_gradients: `run` takes float16
  // and bfloat16 gradients for float32 ones and widens them itself (graph::HostEffectOptions).
  bool apply_as_traced_node(const std::vector<Tensor>& grads, std::function<void(const std::vector<Tensor>&)> run,
                            bool gradient_triples = false, bool widens_half_gradients = false);
  // class_name: the Keras class name, whose snake_case names an unnamed optimizer.
  Optimizer(const std::string& class_name, OptimizerOptions options);

  // Creates the subclass's slot variables for `vars` (Keras: build after super().build).
  virtual void build_slots(const std::vector<Variable>& vars) = 0;
  // Updates `variable` (the index-th built variable) from `gradient`, already unscaled, clipped and
  // cast to the variable's dtype; learning_rate is the float32 value for this step.
  virtual void update_step(const Tensor& gradient, Variable& variable, size_t index, double learning_rate) = 0;
  // update_step with the gradient as the factors of matmul(a, b, {.transpose_a = true}) (see SourceGradient), in
  // the variable's dtype. The default multiplies them out and calls update_step.
  virtual void update_step_factored(const Tensor& a, const Tensor& b, Variable& variable, size_t index,
                                    double learning_rate);
  // Whether update_steps_fused can update the indexed variables from `grads` (each in its variable's dtype, none
  // factored): the subclass's one fused pass over all of them (PyTorch's fused optimizers). Default: never.
  virtual bool fuses_update_steps(const std::vector<Tensor>& /*grads*/, const std::vector<size_t>& /*indices*/) {
    return false;
  }
  // Every update_step of one update in one pass, where fuses_update_steps said so: `step` is current_step() as a
  // 0-d int64 tensor (on the host, or the device's own count), and nothing changes unless `condition` (0-d bool)
  // is true. The bits are update_step's, variable by variable.
  virtual void update_steps_fused(const std::vector<Tensor>& grads, const std::vector<size_t>& indices,
                                  double learning_rate, const Tensor& step, const Tensor& condition);
  // Whether the update of the indexed variables from `grads` (defined, checked) can be one op on them in place
  // in a traced function (update_in_graph). Asked only where the base's own part can be ops too (a fixed
  // learning rate; no EMA, accumulation, loss-scale factor or clipping). Default: no (the update runs as a host
  // call).
  virtual bool can_update_in_graph(const std::vector<SourceGradient>& /*grads*/,
                                   const std::vector<size_t>& /*indices*/) {
    return false;
  }
  // Whether `op` (an update over many variables) has a kernel for the indexed variables, which share one device
  // and dtype: what can_update_in_graph asks of its own op.
  bool multi_update_supports(OpId op, const std::vector<size_t>& indices) const;
  // Where can_update_in_graph said yes, while a function is traced: records the update as that op
  // (graph::update_variables), reading `step` (the count of earlier updates, 0-d int64) and `learning_rate` (the
  // rate's variable, 0-d float32) as tensors when it runs. The bits are those of the eager update.
  virtual void update_in_graph(const std::vector<SourceGradient>& /*grads*/, const std::vector<size_t>& /*indices*/,
                               const Tensor& /*step*/, const Tensor& /*learning_rate*/) {}
  // Runs once per update before the update steps (Keras: _backend_update_step; Nadam's u_product).
  virtual void before_update_steps(double /*learning_rate*/) {}
  // The decoupled weight decay of the index-th built variable for this update, or none to leave it alone
  // (Keras: the per-variable choice inside _apply_weight_decay). The default is weight_decay unless
  // exclude_from_weight_decay excludes the variable by its full name; Muon picks per variable.
  virtual std::optional<double> weight_decay_for(size_t index);
  // Keras's _use_weight_decay: false when the index-th variable was passed to exclude_from_weight_decay or
  // `name` (what the patterns are searched in) matches one of its patterns; decided once per variable.
  bool use_weight_decay(size_t index, const std::string& name);

  // A tracked, non-trainable variable named "<optimizer>/<name>".
  Variable add_variable(const Tensor& initial_value, const std::string& name);
  // A slot shaped like `reference`, named "<optimizer>/<reference name with '/' -> '_'>_<name>", filled
  // with initial_value rounded to float32 first (as Keras's Constant initializer casts it).
  Variable add_variable_from_reference(const Variable& reference, const std::string& name, double initial_value = 0);
  // One slot per variable (Keras: add_optimizer_variables with one name).
  std::vector<Variable> add_optimizer_variables(const std::vector<Variable>& vars, const std::string& name,
                                                double initial_value = 0);
  // Several slots per variable, created interleaved per variable as Keras does; result[i] is names[i]'s list.
  std::vector<std::vector<Variable>> add_optimizer_variables(const std::vector<Variable>& vars,
                                                             std::initializer_list<const char*> names);
  // The count of updates before the running one (valid inside update_step / before_update_steps): the
  // iteration count, divided by gradient_accumulation_steps when set (Keras's `iterations` property).
  int64_t current_step() const;
  // The built variables, in build order.
  const std::vector<Variable>& trainable_variables() const { return trainable_; }
  const OptimizerOptions& base() const { return options_; }

 private:
  std::vector<size_t> indices_of(const std::vector<Variable>& vars) const;
  // Every tracked variable's index, for `n` gradients given without variables (apply(grads), apply_if):
  // FailedPrecondition before build, InvalidArgument when n is not the number of trainable variables.
  std::vector<size_t> indices_of_all(size_t n) const;
  // The gradients that are defined, with their variables' indices, checked against the variables.
  void keep_defined(const std::vector<SourceGradient>& all_grads, const std::vector<size_t>& all_indices,
                    std::vector<SourceGradient>& grads, std::vector<size_t>& indices) const;
  // While a function is traced: the update as graph nodes (update_in_graph, then the count's increment) where
  // the base and the subclass allow; false, having recorded nothing of the update, elsewhere.
  bool trace_update(const std::vector<SourceGradient>& grads, const std::vector<Variable>& vars);
  // condition: apply_if's (undefined: always update).
  void apply_indexed(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices,
                     const Tensor& condition = {});
  // The gated update on the device (apply_if), when it fuses; false, having changed nothing, when it does not.
  bool apply_gated(std::vector<Tensor>& grads, const std::vector<size_t>& indices, const Tensor& condition);
  bool clips_gradients() const;  // some clipping option is set and positive
  void clip_gradients(std::vector<Tensor>& grads) const;
  // condition: as apply_if's (undefined: always).
  void apply_weight_decay(const std::vector<size_t>& indices, double learning_rate, const Tensor& condition = {});
  void update_moving_averages(int64_t step);
  void overwrite_with_averages();
  double learning_rate_at(int64_t step) const;
  int64_t read_iterations() const;
  void remember_iterations(int64_t value);  // iterations_ now holds `value`

  std::string name_;
  OptimizerOptions options_;
  schedules::SchedulePtr schedule_;
  Variable iterations_;
  Variable learning_rate_;  // undefined with a schedule
  std::vector<Variable> variables_;
  std::vector<Variable> trainable_;
  std::vector<Variable> averages_;      // use_ema
  std::vector<Variable> accumulators_;  // gradient_accumulation_steps
  bool built_ = false;
  int64_t step_ = 0;
  // Host copies of iterations_ and learning_rate_, valid while the variable holds the *_seen_ value.
  mutable Tensor iterations_seen_, learning_rate_seen_;
  mutable int64_t iterations_host_ = 0;
  mutable float learning_rate_host_ = 0;
  // Weight decay exclusions and a per-variable cache of the decision (-1: not decided yet).
  std::vector<Variable> wd_excluded_;
  std::optional<detail::NamePattern> wd_excluded_pattern_;
  std::vector<int> wd_cache_;
};

}  // namespace ember::optimizers
