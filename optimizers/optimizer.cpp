#include "optimizers/optimizer.h"

#include "framework/autodiff/gradient_tape.h"
#include "framework/core/names.h"  // unique_layer_name: Keras names optimizers like layers
#include "framework/core/strings.h"
#include "framework/distribute/strategy.h"
#include "framework/graph/trace.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "optimizers/clipping.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;
using nlohmann::json;

namespace {

// Variables are handles; two refer to the same variable when they show the same value object (values
// are replaced, never shared, by assign; build separates variables created from one tensor).
bool same_variable(const Variable& a, const Variable& b) { return a.value().is_same(b.value()); }

}  // namespace

// ---------------------------------------------------------------- construction

Optimizer::Optimizer(const std::string& class_name, OptimizerOptions options)
    : name_(options.name.empty() ? unique_layer_name(to_snake_case(class_name)) : options.name),
      options_(std::move(options)),
      schedule_(options_.learning_rate.schedule()) {
  if (options_.use_ema) {
    EMBER_CHECK(options_.ema_momentum >= 0 && options_.ema_momentum <= 1, InvalidArgument)
        << class_name << ": `ema_momentum` must be in the range [0, 1]. Received: ema_momentum="
        << options_.ema_momentum;
    // Keras tests truthiness: 0 means "never", like unset.
    EMBER_CHECK(!options_.ema_overwrite_frequency || *options_.ema_overwrite_frequency >= 0, InvalidArgument)
        << class_name << ": `ema_overwrite_frequency` must be an integer >= 1 or None. Received: "
        << "ema_overwrite_frequency=" << *options_.ema_overwrite_frequency;
  }
  EMBER_CHECK(!options_.gradient_accumulation_steps || *options_.gradient_accumulation_steps >= 2, InvalidArgument)
      << class_name << ": `gradient_accumulation_steps` must be an integer >= 2. Received: "
      << "gradient_accumulation_steps=" << *options_.gradient_accumulation_steps;
  int clip_args = options_.clipnorm.has_value() + options_.clipvalue.has_value() + options_.global_clipnorm.has_value();
  auto show = [](const std::optional<double>& v) { return v ? std::to_string(*v) : std::string("None"); };
  EMBER_CHECK(clip_args <= 1, InvalidArgument)
      << class_name << ": Only one of `clipnorm`, `clipvalue` and `global_clipnorm` can be set. Received: clipnorm="
      << show(options_.clipnorm) << ", clipvalue=" << show(options_.clipvalue)
      << ", global_clipnorm=" << show(options_.global_clipnorm);

  iterations_ = add_variable(Tensor::scalar<int64_t>(0), "iteration");
  if (!schedule_)
    learning_rate_ = add_variable(Tensor::scalar<float>(static_cast<float>(options_.learning_rate.value())),
                                  "learning_rate");
}

Optimizer::~Optimizer() = default;
Optimizer::Optimizer(Optimizer&&) noexcept = default;

Variable Optimizer::add_variable(const Tensor& initial_value, const std::string& name) {
  Variable v(initial_value, {.name = name_ + "/" + name, .trainable = false});
  variables_.push_back(v);
  return v;
}

Variable Optimizer::add_variable_from_reference(const Variable& reference, const std::string& name,
                                                double initial_value) {
  std::string stem = reference.name();
  for (char& ch : stem)
    if (ch == '/' || ch == ':') ch = '_';
  Tensor init = ops::zeros_like(reference.value());
  // Keras fills it with initializers.Constant: ops.cast(value, dtype), and TF's cast of a Python float
  // goes through float32, so a float64 slot starts at float32(0.1), not 0.1.
  if (initial_value != 0) init = init + static_cast<double>(static_cast<float>(initial_value));
  return add_variable(init, stem + "_" + name);
}

std::vector<Variable> Optimizer::add_optimizer_variables(const std::vector<Variable>& vars, const std::string& name,
                                                         double initial_value) {
  std::vector<Variable> out;
  for (const Variable& v : vars) out.push_back(add_variable_from_reference(v, name, initial_value));
  return out;
}

std::vector<std::vector<Variable>> Optimizer::add_optimizer_variables(const std::vector<Variable>& vars,
                                                                      std::initializer_list<const char*> names) {
  std::vector<std::vector<Variable>> out(names.size());
  for (const Variable& v : vars) {
    size_t i = 0;
    for (const char* name : names) out[i++].push_back(add_variable_from_reference(v, name));
  }
  return out;
}

void Optimizer::build(const std::vector<Variable>& vars) {
  if (built_) return;
  for (const Variable& v : vars)
    EMBER_CHECK(v.defined(), InvalidArgument) << name_ << ".build: a variable is undefined (default-constructed)";
  trainable_ = vars;
  // Variables created from one tensor share a value until assigned; give each its own so identity holds.
  for (size_t i = 0; i < trainable_.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (same_variable(trainable_[i], trainable_[j])) {
        trainable_[i].assign(trainable_[i].value().clone());
        // Still the same after the assignment: one variable passed twice, not two sharing a tensor.
        EMBER_CHECK(!same_variable(trainable_[i], trainable_[j]), InvalidArgument)
            << name_ << ".build: variable '" << trainable_[i].name() << "' is listed twice";
      }
  if (options_.use_ema) averages_ = add_optimizer_variables(trainable_, "average");
  if (options_.gradient_accumulation_steps) accumulators_ = add_optimizer_variables(trainable_, "gradient_accumulator");
  wd_cache_.assign(trainable_.size(), -1);
  build_slots(trainable_);
  built_ = true;
}

// ---------------------------------------------------------------- apply

void Optimizer::apply_gradients(const std::vector<std::pair<Tensor, Variable>>& grads_and_vars) {
  std::vector<Tensor> grads;
  std::vector<Variable> vars;
  for (const auto& [g, v] : grads_and_vars) {
    grads.push_back(g);
    vars.push_back(v);
  }
  apply(grads, vars);
}

Tensor SourceGradient::materialize() const {
  return factored() ? ops::matmul(a, b, {.transpose_a = true}) : value;
}

namespace {
std::vector<SourceGradient> unfactored(const std::vector<Tensor>& grads) {
  std::vector<SourceGradient> out(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) out[i].value = grads[i];
  return out;
}
}  // namespace

void Optimizer::apply(const std::vector<Tensor>& grads, const std::vector<Variable>& vars) {
  if (const auto merged = distribute::merge_gradients(this, grads)) apply_factored(unfactored(*merged), vars);
}

bool Optimizer::apply_as_traced_node(const std::vector<Tensor>& grads,
                                     std::function<void(const std::vector<Tensor>&)> run, bool gradient_triples,
                                     bool widens_half_gradients) {
  if (!graph::is_tracing()) return false;
  graph::host_effect(
      name_ + ".apply", grads,
      [run = std::move(run)](std::span<const Tensor> in) { run(std::vector<Tensor>(in.begin(), in.end())); },
      {.gradient_triples = gradient_triples, .widens_half_gradients = widens_half_gradients});
  return true;
}

void Optimizer::apply_factored(const std::vector<SourceGradient>& grads, const std::vector<Variable>& vars) {
  if (grads.empty() && vars.empty()) return;  // Keras: an empty gradient list is a no-op
  if (graph::is_tracing()) {
    if (trace_update(grads, vars)) return;
    // Each gradient as its three parts (value, or the factors a and b), rebuilt on every call.
    std::vector<Tensor> parts;
    for (const SourceGradient& g : grads) parts.insert(parts.end(), {g.value, g.a, g.b});
    apply_as_traced_node(parts, [this, vars](const std::vector<Tensor>& in) {
      std::vector<SourceGradient> rebuilt(in.size() / 3);
      for (size_t i = 0; i < rebuilt.size(); ++i) rebuilt[i] = SourceGradient{in[3 * i], in[3 * i + 1], in[3 * i + 2]};
      apply_factored(rebuilt, vars);
    }, /*gradient_triples=*/true);
    return;
  }
  EMBER_CHECK(grads.size() == vars.size(), InvalidArgument)
      << name_ << ".apply: got " << grads.size() << " gradients for " << vars.size()
      << " variables; pass one gradient (or an undefined Tensor) per variable";
  if (!built_) build(vars);
  apply_indexed(grads, indices_of(vars));
}

void Optimizer::update_step_factored(const Tensor& a, const Tensor& b, Variable& variable, size_t index,
                                     double learning_rate) {
  update_step(SourceGradient{{}, a, b}.materialize(), variable, index, learning_rate);
}

void Optimizer::apply(const std::vector<Tensor>& grads) {
  if (grads.empty()) return;
  const auto merged = distribute::merge_gradients(this, grads);
  if (!merged) return;
  if (apply_as_traced_node(*merged, [this](const std::vector<Tensor>& g) { apply(g); })) return;
  apply_indexed(unfactored(*merged), indices_of_all(merged->size()));
}

void Optimizer::apply_if(const Tensor& condition, const std::vector<Tensor>& grads, const std::vector<Variable>* vars) {
  EMBER_CHECK(condition.defined() && condition.rank() == 0 && condition.dtype() == DType::Bool, InvalidArgument)
      << name_ << ".apply_if: the condition has shape " << (condition.defined() ? condition.shape().to_string() : "undefined")
      << "; expected a 0-d bool tensor";
  EMBER_CHECK(!graph::is_tracing(), FailedPrecondition)
      << name_ << ".apply_if: not inside a traced function; call apply, or apply_if from a host effect";
  if (vars) {
    if (grads.empty() && vars->empty()) return;
    EMBER_CHECK(grads.size() == vars->size(), InvalidArgument)
        << name_ << ".apply: got " << grads.size() << " gradients for " << vars->size()
        << " variables; pass one gradient (or an undefined Tensor) per variable";
    if (!built_) build(*vars);
    apply_indexed(unfactored(grads), indices_of(*vars), condition);
    return;
  }
  if (grads.empty()) return;
  apply_indexed(unfactored(grads), indices_of_all(grads.size()), condition);
}

void Optimizer::update_steps_fused(const std::vector<Tensor>&, const std::vector<size_t>&, double, const Tensor&,
                                   const Tensor&) {
  throw make_error<Internal>(name_, ": update_steps_fused called, but fuses_update_steps never says yes");
}

std::vector<size_t> Optimizer::indices_of_all(size_t n) const {
  EMBER_CHECK(built_, FailedPrecondition)
      << name_ << ".apply: when passing `grads` without `variables`, the optimizer must already be built on a "
      << "list of variables. Call build(trainable_variables) first.";
  EMBER_CHECK(n == trainable_.size(), InvalidArgument)
      << name_ << ".apply: received a list of " << n << " gradients, but the optimizer is tracking "
      << trainable_.size() << " trainable variables";
  std::vector<size_t> indices(n);
  for (size_t i = 0; i < n; ++i) indices[i] = i;
  return indices;
}

std::vector<size_t> Optimizer::indices_of(const std::vector<Variable>& vars) const {
  std::vector<size_t> out(vars.size());
  for (size_t i = 0; i < vars.size(); ++i) {
    EMBER_CHECK(vars[i].defined(), InvalidArgument) << name_ << ".apply: variable " << i << " is undefined";
    // The usual case: the same list, in the same order, as at build.
    if (i < trainable_.size() && same_variable(vars[i], trainable_[i])) {
      out[i] = i;
      continue;
    }
    size_t j = 0;
    while (j < trainable_.size() && !same_variable(vars[i], trainable_[j])) ++j;
    EMBER_CHECK(j < trainable_.size(), InvalidArgument)
        << name_ << ": Unknown variable: '" << vars[i].name() << "'. This optimizer can only be called for the "
        << "variables it was originally built with. When working with a new set of variables, you should "
        << "recreate a new optimizer instance.";
    out[i] = j;
  }
  return out;
}

bool Optimizer::trace_update(const std::vector<SourceGradient>& all_grads, const std::vector<Variable>& vars) {
  if (schedule_ || options_.use_ema || options_.gradient_accumulation_steps || options_.loss_scale_factor ||
      clips_gradients() || all_grads.size() != vars.size())
    return false;
  for (const Variable& v : vars)
    if (!v.defined()) return false;  // the host call's path says what is wrong
  if (!built_) {
    graph::SuspendTracing suspend;  // slots are made once, outside the graph (TF lifts them out of the function)
    build(vars);
  }
  std::vector<SourceGradient> grads;
  std::vector<size_t> indices;
  keep_defined(all_grads, indices_of(vars), grads, indices);
  if (!can_update_in_graph(grads, indices)) return false;
  NoRecordScope no_record;
  const Tensor step = iterations_.value();
  const Tensor& learning_rate = learning_rate_.value();
  // The decoupled weight decay (AdamW) as ops before the update, at the rate read when the step runs.
  for (size_t i : indices) {
    const std::optional<double> weight_decay = weight_decay_for(i);
    if (!weight_decay) continue;
    Variable& v = trainable_[i];
    const Tensor lr = learning_rate.dtype() == v.dtype() ? learning_rate : ops::cast(learning_rate, v.dtype());
    v.assign(v.value() - v.value() * Scalar::cast(*weight_decay, v.dtype()).value() * lr);
  }
  update_in_graph(grads, indices, step, learning_rate);
  // Counted on the device, as eager counts (the host copy is read again when needed).
  iterations_.assign(step + 1);
  return true;
}

void Optimizer::keep_defined(const std::vector<SourceGradient>& all_grads, const std::vector<size_t>& all_indices,
                             std::vector<SourceGradient>& grads, std::vector<size_t>& indices) const {
  for (size_t i = 0; i < all_grads.size(); ++i) {
    const SourceGradient& g = all_grads[i];
    if (!g.defined()) continue;
    const Variable& v = trainable_[all_indices[i]];
    EMBER_CHECK(!g.factored() || (g.b.defined() && g.a.rank() == 2 && g.b.rank() == 2 &&
                                  g.a.shape()[0] == g.b.shape()[0] && g.a.dtype() == g.b.dtype()),
                InvalidArgument)
        << name_ << ".apply: the factored gradient for variable '" << v.name() << "' has factors of shapes "
        << g.a.shape() << " and " << (g.b.defined() ? g.b.shape().to_string() : "undefined")
        << "; expected (k, m) and (k, n) of one dtype, whose product a^T @ b is the gradient";
    const Shape shape = g.factored() ? Shape{g.a.shape()[1], g.b.shape()[1]} : g.value.shape();
    const DType dtype = g.factored() ? g.a.dtype() : g.value.dtype();
    EMBER_CHECK(shape == v.shape(), InvalidArgument)
        << name_ << ".apply: the gradient for variable '" << v.name() << "' has shape " << shape
        << ", expected the variable's shape " << v.shape();
    EMBER_CHECK(is_floating(dtype), InvalidArgument)
        << name_ << ".apply: the gradient for variable '" << v.name() << "' has dtype " << dtype
        << ", expected a floating dtype";
    grads.push_back(g);
    indices.push_back(all_indices[i]);
  }
  EMBER_CHECK(!grads.empty(), InvalidArgument) << name_ << ".apply: No gradients provided for any variable.";
}

void Optimizer::apply_indexed(const std::vector<SourceGradient>& all_grads, const std::vector<size_t>& all_indices,
                              const Tensor& condition) {
  NoRecordScope no_record;
  // Keras filters None gradients first; everything below sees only the variables that have one.
  std::vector<SourceGradient> grads;
  std::vector<size_t> indices;
  keep_defined(all_grads, all_indices, grads, indices);

  if (condition.defined()) {
    // Gated on the device where the update allows it; else the host reads the condition (a GPU step waits).
    std::vector<Tensor> values(grads.size());
    for (size_t k = 0; k < grads.size(); ++k) {
      values[k] = grads[k].materialize();
      const DType dt = trainable_[indices[k]].dtype();
      if (values[k].dtype() != dt) values[k] = ops::cast(values[k], dt);
    }
    if (apply_gated(values, indices, condition)) return;
    if (!condition.item<bool>()) return;
  }
  step_ = read_iterations();
  const int64_t accumulate = options_.gradient_accumulation_steps.value_or(0);
  // Keras updates on every call, or with accumulation on every accumulate-th one (the others only add).
  const bool update = accumulate == 0 || (step_ + 1) % accumulate == 0;
  // The scaling, the accumulation and the clipping see every gradient whole.
  if (options_.loss_scale_factor || accumulate || clips_gradients()) {
    std::vector<Tensor> values(grads.size());
    for (size_t k = 0; k < grads.size(); ++k) values[k] = grads[k].materialize();
    if (options_.loss_scale_factor)
      for (Tensor& g : values) g = g / *options_.loss_scale_factor;
    for (size_t k = 0; k < grads.size() && accumulate; ++k) {
      Variable& acc = accumulators_[indices[k]];
      Tensor sum = values[k] + acc.value();  // Keras: g + acc_g
      if (update)
        values[k] = sum / static_cast<double>(accumulate);  // the mean, updated with below
      else
        acc.assign(sum.dtype() == acc.dtype() ? sum : ops::cast(sum, acc.dtype()));
    }
    if (update) clip_gradients(values);
    for (size_t k = 0; k < grads.size(); ++k) grads[k] = SourceGradient{values[k], {}, {}};
  }
  if (update) {
    const double lr = learning_rate_at(step_);
    apply_weight_decay(indices, lr);
    before_update_steps(lr);
    // A factored gradient keeps update_step_factored (which folds the product in); otherwise one fused pass
    // over all variables where the subclass has one, else update_step per variable.
    bool factored = false;
    for (size_t k = 0; k < grads.size(); ++k)
      factored = factored || (grads[k].factored() && grads[k].a.dtype() == trainable_[indices[k]].dtype());
    std::vector<Tensor> values;
    if (!factored) {
      for (size_t k = 0; k < grads.size(); ++k) {
        const DType dt = trainable_[indices[k]].dtype();
        Tensor value = grads[k].materialize();
        values.push_back(value.dtype() == dt ? value : ops::cast(value, dt));
      }
    }
    if (!factored && fuses_update_steps(values, indices)) {
      // Without accumulation the step is the device's own count (nothing to upload).
      const Tensor step = accumulate ? Tensor::scalar<int64_t>(current_step(), Device::cpu()) : iterations_.value();
      update_steps_fused(values, indices, lr, step, Tensor::scalar<bool>(true, Device::cpu()));
    } else {
      for (size_t k = 0; k < grads.size(); ++k) {
        Variable& v = trainable_[indices[k]];
        const SourceGradient& g = grads[k];
        if (g.factored() && g.a.dtype() == v.dtype()) {
          update_step_factored(g.a, g.b, v, indices[k], lr);
          continue;
        }
        if (!factored) {
          update_step(values[k], v, indices[k], lr);
          continue;
        }
        Tensor value = g.materialize();
        update_step(value.dtype() == v.dtype() ? value : ops::cast(value, v.dtype()), v, indices[k], lr);
      }
    }
    // Keras resets every accumulator, those of variables without a gradient this time included.
    for (Variable& acc : accumulators_) acc.assign(ops::zeros_like(acc.value()));
  }
  if (options_.use_ema) {  // on every call, at the count of updates (Keras's `iterations`)
    update_moving_averages(current_step());
    const int64_t freq = options_.ema_overwrite_frequency.value_or(0);
    if (freq > 0 && (current_step() + 1) % freq == 0) overwrite_with_averages();
  }
  // Counted on the device (an upload per step could wait for a staging buffer); the host keeps its copy.
  iterations_.assign(iterations_.value() + 1);
  remember_iterations(step_ + 1);
}

bool Optimizer::apply_gated(std::vector<Tensor>& grads, const std::vector<size_t>& indices, const Tensor& condition) {
  // Everything that needs the step count on the host, or sees the gradients whole, reads the condition instead.
  if (schedule_ || options_.use_ema || options_.gradient_accumulation_steps || options_.loss_scale_factor ||
      clips_gradients() || !fuses_update_steps(grads, indices))
    return false;
  const double lr = learning_rate_at(0);  // a fixed rate: no step count needed
  apply_weight_decay(indices, lr, condition);
  update_steps_fused(grads, indices, lr, iterations_.value(), condition);
  // Keras's LossScaleOptimizer leaves the count alone on a skipped step. The host copy is now unknown: a later
  // host read (learning_rate(), a step that cannot be gated) reads the variable once.
  const Tensor now = iterations_.value();
  iterations_.assign(ops::where(condition, now + 1, now));
  return true;
}

int64_t Optimizer::current_step() const {
  return options_.gradient_accumulation_steps ? step_ / *options_.gradient_accumulation_steps : step_;
}

bool Optimizer::multi_update_supports(OpId op, const std::vector<size_t>& indices) const {
  const Variable& first = trainable_variables()[indices[0]];
  if (!supports(op, first.device().type(), first.dtype())) return false;
  for (size_t i : indices) {
    const Variable& var = trainable_variables()[i];
    if (var.device() != first.device() || var.dtype() != first.dtype()) return false;
  }
  return true;
}

bool Optimizer::clips_gradients() const {
  return (options_.clipnorm && *options_.clipnorm > 0) || (options_.global_clipnorm && *options_.global_clipnorm > 0) ||
         (options_.clipvalue && *options_.clipvalue > 0);
}

void Optimizer::clip_gradients(std::vector<Tensor>& grads) const {
  // Keras tests each option for "set and > 0", in this order.
  if (options_.clipnorm && *options_.clipnorm > 0) {
    for (Tensor& g : grads) g = detail::clip_by_norm(g, *options_.clipnorm);
  } else if (options_.global_clipnorm && *options_.global_clipnorm > 0) {
    detail::clip_by_global_norm(grads, *options_.global_clipnorm);
  } else if (options_.clipvalue && *options_.clipvalue > 0) {
    for (Tensor& g : grads) g = ops::clip_by_value(g, -*options_.clipvalue, *options_.clipvalue);
  }
}

// ---------------------------------------------------------------- weight decay

void Optimizer::exclude_from_weight_decay(const std::vector<std::string>& var_names) {
  exclude_from_weight_decay(std::vector<Variable>{}, var_names);
}

void Optimizer::exclude_from_weight_decay(const std::vector<Variable>& var_list,
                                          const std::vector<std::string>& var_names) {
  // Keras replaces earlier exclusions and forgets its cached decisions.
  wd_excluded_ = var_list;
  wd_excluded_pattern_.reset();
  if (!var_names.empty()) {
    std::string pattern;
    for (const std::string& n : var_names) pattern += (pattern.empty() ? "" : "|") + n;
    wd_excluded_pattern_.emplace(pattern, name_ + ".exclude_from_weight_decay");
  }
  wd_cache_.assign(trainable_.size(), -1);
}

bool Optimizer::use_weight_decay(size_t index, const std::string& name) {
  if (wd_cache_[index] >= 0) return wd_cache_[index] != 0;
  const Variable& v = trainable_[index];
  bool use = true;
  for (const Variable& ex : wd_excluded_) use = use && !same_variable(ex, v);
  if (use && wd_excluded_pattern_) use = !wd_excluded_pattern_->search(name);
  wd_cache_[index] = use;
  return use;
}

std::optional<double> Optimizer::weight_decay_for(size_t index) {
  if (!options_.weight_decay || !use_weight_decay(index, trainable_[index].name())) return std::nullopt;
  return options_.weight_decay;
}

void Optimizer::apply_weight_decay(const std::vector<size_t>& indices, double learning_rate, const Tensor& condition) {
  for (size_t i : indices) {
    const std::optional<double> weight_decay = weight_decay_for(i);
    if (!weight_decay) continue;
    Variable& v = trainable_[i];
    const double lr = Scalar(learning_rate, v.dtype()).value();
    const double wd = Scalar::cast(*weight_decay, v.dtype()).value();
    Tensor decayed = v.value() - v.value() * wd * lr;
    v.assign(condition.defined() ? ops::where(condition, decayed, v.value()) : decayed);
  }
}

// ---------------------------------------------------------------- EMA

void Optimizer::update_moving_averages(int64_t step) {
  for (size_t i = 0; i < trainable_.size(); ++i) {
    const Variable& v = trainable_[i];
    // The first step copies the variable: momentum is 0 until iterations != 0.
    const Scalar momentum = Scalar(step != 0 ? 1.0 : 0.0, v.dtype()) * options_.ema_momentum;
    averages_[i].assign(averages_[i].value() * momentum.value() + v.value() * (1.0 - momentum).value());
  }
}

void Optimizer::overwrite_with_averages() {
  for (size_t i = 0; i < trainable_.size(); ++i) trainable_[i].assign(averages_[i].value());
}

void Optimizer::finalize_variable_values(const std::vector<Variable>& vars) {
  if (!options_.use_ema) return;
  EMBER_CHECK(vars.size() == averages_.size(), InvalidArgument)
      << name_ << ".finalize_variable_values: The length of model variables (" << vars.size()
      << ") to override does not match the length of model variables stored in the optimizer ("
      << averages_.size() << "). Please check if the optimizer was called on your model.";
  NoRecordScope no_record;
  for (size_t i = 0; i < vars.size(); ++i) {
    Variable v = vars[i];
    v.assign(averages_[i].value());
  }
}

// ---------------------------------------------------------------- learning rate, state, config

// The host copies below stand while the variable holds the value they came from (assign always installs a
// new one), so a step reads neither variable back: on a GPU each read would drain the queue. A value set
// from outside (set_weights, a checkpoint, assign) is read once, at the next step.
int64_t Optimizer::read_iterations() const {
  const Tensor& now = iterations_.value();
  if (!now.is_same(iterations_seen_)) {
    iterations_host_ = now.item<int64_t>();
    iterations_seen_ = now;
  }
  return iterations_host_;
}

void Optimizer::remember_iterations(int64_t value) {
  iterations_seen_ = iterations_.value();
  iterations_host_ = value;
}

double Optimizer::learning_rate_at(int64_t step) const {
  // A schedule takes the step as a number, which the host has (above): no device read either way.
  if (schedule_) return (*schedule_)(step);
  const Tensor& now = learning_rate_.value();
  if (!now.is_same(learning_rate_seen_)) {
    learning_rate_host_ = now.item<float>();
    learning_rate_seen_ = now;
  }
  return static_cast<double>(learning_rate_host_);
}

double Optimizer::learning_rate() const { return learning_rate_at(read_iterations()); }

void Optimizer::set_learning_rate(double learning_rate) {
  EMBER_CHECK(!schedule_, FailedPrecondition)
      << name_ << ": This optimizer was created with a `LearningRateSchedule` object as its `learning_rate` "
      << "constructor argument, hence its learning rate is not settable. If you need the learning rate to be "
      << "settable, you should instantiate the optimizer with a float `learning_rate` argument.";
  learning_rate_.assign(Tensor::scalar<float>(static_cast<float>(learning_rate), learning_rate_.device()));
  learning_rate_seen_ = learning_rate_.value();
  learning_rate_host_ = static_cast<float>(learning_rate);
}

void Optimizer::set_weights(const std::vector<Tensor>& values) {
  EMBER_CHECK(built_, FailedPrecondition)
      << name_ << ".set_weights: the optimizer has not yet been built. Call build(trainable_variables) to create "
      << "the optimizer weights first.";
  EMBER_CHECK(values.size() == variables_.size(), InvalidArgument)
      << name_ << ".set_weights: got " << values.size() << " values for " << variables_.size() << " variables";
  for (size_t i = 0; i < values.size(); ++i)
    EMBER_CHECK(values[i].shape() == variables_[i].shape() && values[i].dtype() == variables_[i].dtype(),
                InvalidArgument)
        << name_ << ".set_weights: optimizer variable '" << variables_[i].name() << "' is " << variables_[i].dtype()
        << " " << variables_[i].shape() << ", got " << values[i].dtype() << " " << values[i].shape();
  for (size_t i = 0; i < values.size(); ++i) variables_[i].assign(values[i].to(variables_[i].device()));
}

Tensor Optimizer::scale_loss(const Tensor& loss) const {
  return options_.loss_scale_factor ? loss * *options_.loss_scale_factor : loss;
}

}  // namespace ember::optimizers
