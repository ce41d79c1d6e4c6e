#include "optimizers/loss_scale_optimizer.h"

#include <cmath>

#include "framework/autodiff/gradient_tape.h"
#include "framework/distribute/strategy.h"
#include "framework/graph/trace.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/optimizer_ops.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"

namespace ember::optimizers {

namespace {

OptimizerOptions lso_base_options(const LossScaleOptimizerOptions& o) {
  OptimizerOptions b;
  b.learning_rate = 0.0;  // Keras gives the wrapper its own (unused) learning_rate variable at 0
  b.name = o.name;
  return b;
}

// Half-precision losses are scaled in float32, as Keras's multiply by the float32 scale promotes them.
Tensor lso_widen(const Tensor& t) {
  return t.dtype() == DType::Float16 || t.dtype() == DType::BFloat16 ? ops::cast(t, DType::Float32) : t;
}

}  // namespace

LossScaleOptimizer::LossScaleOptimizer(OptimizerPtr inner, LossScaleOptimizerOptions o)
    : Optimizer("LossScaleOptimizer", lso_base_options(o)),
      inner_(std::move(inner)),
      dynamic_(o.dynamic),
      initial_scale_(o.initial_scale),
      growth_steps_(o.dynamic_growth_steps) {
  EMBER_CHECK(inner_ != nullptr, InvalidArgument) << "LossScaleOptimizer: the inner optimizer is null";
  EMBER_CHECK(std::isfinite(initial_scale_) && initial_scale_ > 0, InvalidArgument)
      << "LossScaleOptimizer: initial_scale must be a positive finite number, got " << initial_scale_;
  EMBER_CHECK(growth_steps_ >= 1, InvalidArgument)
      << "LossScaleOptimizer: dynamic_growth_steps must be at least 1, got " << growth_steps_;
  // Keras disables the inner optimizer's own loss scaling, else gradients would be unscaled twice.
  inner_->set_loss_scale_factor(std::nullopt);
}

void LossScaleOptimizer::build_slots(const std::vector<Variable>& vars) {
  // Beside the variables: the scale meets the loss and the gradients in ops.
  const Device device = vars.empty() ? default_device() : vars.front().device();
  step_counter_ = add_variable(Tensor::scalar<int64_t>(0, device), "step_counter");
  dynamic_scale_ = add_variable(Tensor::scalar<float>(static_cast<float>(initial_scale_), device), "dynamic_scale");
}

void LossScaleOptimizer::update_step(const Tensor&, Variable&, size_t, double) {
  throw make_error<Internal>(name(), ": update_step is not used; apply hands the update to ", inner_->name());
}

void LossScaleOptimizer::build(const std::vector<Variable>& vars) {
  if (Optimizer::built()) return;
  Optimizer::build(vars);
  inner_->build(vars);
}

bool LossScaleOptimizer::built() const { return Optimizer::built(); }

double LossScaleOptimizer::dynamic_scale() const {
  return built() ? static_cast<double>(dynamic_scale_.value().item<float>()) : initial_scale_;
}

int64_t LossScaleOptimizer::step_counter() const { return built() ? step_counter_.value().item<int64_t>() : 0; }

Tensor LossScaleOptimizer::scale_for(const Tensor& t) const {
  // The variable's value, not a host copy: reading it would wait for the queued step on a GPU. A float32
  // value: exact in float32 and float64 (the ops below then compute what `t * double` did).
  if (!built()) {
    // A traced function would keep the initial scale as a constant, and never see it change.
    EMBER_CHECK(!graph::is_tracing(), FailedPrecondition)
        << name() << ": the loss scale is read inside a traced function before the optimizer is built; call "
        << "build(trainable_variables) on it first (fit does)";
    return Tensor::scalar_of(initial_scale_, t.dtype(), Device::cpu());
  }
  const Tensor scale = scale_on(t.device());
  return t.dtype() == scale.dtype() ? scale : ops::cast(scale, t.dtype());
}

Tensor LossScaleOptimizer::scale_on(Device device) const {
  const Tensor& scale = dynamic_scale_.value();
  return scale.device() == device ? scale : scale.to(device);  // moved only where the model moved since build
}

Tensor LossScaleOptimizer::scale_loss(const Tensor& loss) const {
  const Tensor wide = lso_widen(loss);
  return ops::mul(wide, scale_for(wide));
}

std::vector<Tensor> LossScaleOptimizer::get_unscaled_gradients(const std::vector<Tensor>& grads) const {
  NoRecordScope no_record;
  std::vector<Tensor> out;
  out.reserve(grads.size());
  for (const Tensor& g : grads) {
    if (!g.defined()) {
      out.push_back(g);
      continue;
    }
    const Tensor wide = lso_widen(g);
    out.push_back(ops::div(wide, scale_for(wide)));
  }
  return out;
}

void LossScaleOptimizer::apply(const std::vector<Tensor>& grads, const std::vector<Variable>& vars) {
  if (grads.empty() && vars.empty()) return;
  EMBER_CHECK(grads.size() == vars.size(), InvalidArgument)
      << name() << ".apply: got " << grads.size() << " gradients for " << vars.size()
      << " variables; pass one gradient (or an undefined Tensor) per variable";
  apply_merged(grads, vars);
}

void LossScaleOptimizer::apply_factored(const std::vector<SourceGradient>& grads, const std::vector<Variable>& vars) {
  std::vector<Tensor> values(grads.size());
  for (size_t i = 0; i < grads.size(); ++i) values[i] = grads[i].materialize();
  apply(values, vars);
}

void LossScaleOptimizer::apply(const std::vector<Tensor>& grads) {
  if (grads.empty()) return;
  EMBER_CHECK(built(), FailedPrecondition)
      << name() << ".apply: when passing `grads` without `variables`, the optimizer must already be built on a "
      << "list of variables. Call build(trainable_variables) first.";
  apply_merged(grads, std::nullopt);
}

void LossScaleOptimizer::apply_merged(const std::vector<Tensor>& grads, std::optional<std::vector<Variable>> vars) {
  const auto merged = distribute::merge_gradients(this, grads);
  if (!merged) return;
  auto run = [this, vars = std::move(vars)](const std::vector<Tensor>& g) { apply_checked(g, vars ? &*vars : nullptr); };
  // Its unscaling widens half gradients (the graph may hand them over without their casts to float32).
  if (apply_as_traced_node(*merged, run, false, true)) return;
  run(*merged);
}

void LossScaleOptimizer::apply_checked(const std::vector<Tensor>& grads, const std::vector<Variable>* vars) {
  NoRecordScope no_record;
  // Inside strategy.run `grads` are already the replicas' sum (apply merged them, as TF's LossScaleOptimizer
  // all-reduces the scaled gradients before it checks them, so that every replica skips the same steps): the
  // inner optimizer applies them as they are.
  distribute::CrossReplicaScope merged;
  if (vars && !built()) build(*vars);
  // One op unscales every floating gradient and checks them all for infinities and NaNs (Keras checks the scaled
  // gradients, then divides): the half ones widened to float32 in the same pass, one op where there were a cast, a
  // division and a check per gradient.
  std::vector<Tensor> unscaled = grads, floating;
  std::vector<size_t> at;
  for (size_t i = 0; i < grads.size(); ++i) {
    const Tensor& g = grads[i];
    if (!g.defined()) continue;
    if (!is_floating(g.dtype())) {
      unscaled[i] = ops::div(g, scale_for(g));
      continue;
    }
    floating.push_back(g);
    at.push_back(i);
  }
  Tensor all_finite;
  if (!floating.empty()) {
    ops::UnscaledGradients u = ops::unscale_gradients(floating, scale_on(floating[0].device()));
    for (size_t j = 0; j < at.size(); ++j) unscaled[at[j]] = std::move(u.gradients[j]);
    all_finite = std::move(u.finite);
  }
  if (!dynamic_) {
    if (vars) inner_->apply(unscaled, *vars);
    else inner_->apply(unscaled);
    return;
  }
  if (!all_finite.defined()) all_finite = Tensor::scalar<bool>(true, Device::cpu());
  // The flag gates the inner update on the device where the update allows it (Adam's fused pass makes its step
  // size from the device's iteration count), so a GPU step need not wait; else the inner optimizer reads it.
  inner_->apply_if(all_finite, unscaled, vars);
  // The scale and the counter change on the device, selected by the flag: a finite step counts toward doubling
  // the scale, a skipped one halves it and restarts the count.
  const ops::LossScaleUpdate next =
      ops::update_loss_scale(dynamic_scale_.value(), step_counter_.value(), all_finite, growth_steps_);
  dynamic_scale_.assign(next.scale);
  step_counter_.assign(next.counter);
}

std::vector<Variable> LossScaleOptimizer::variables() const {
  std::vector<Variable> out = Optimizer::variables();
  for (const Variable& v : inner_->variables()) out.push_back(v);
  return out;
}

void LossScaleOptimizer::set_weights(const std::vector<Tensor>& values) {
  const size_t own = Optimizer::variables().size(), total = own + inner_->variables().size();
  EMBER_CHECK(built(), FailedPrecondition)
      << name() << ".set_weights: the optimizer has not yet been built. Call build(trainable_variables) to create "
      << "the optimizer weights first.";
  EMBER_CHECK(values.size() == total, InvalidArgument)
      << name() << ".set_weights: got " << values.size() << " values for " << total << " variables (" << own
      << " of the loss scale optimizer, " << total - own << " of " << inner_->name() << ")";
  Optimizer::set_weights(std::vector<Tensor>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(own)));
  inner_->set_weights(std::vector<Tensor>(values.begin() + static_cast<std::ptrdiff_t>(own), values.end()));
}

nlohmann::json LossScaleOptimizer::get_config() const {
  nlohmann::json c = {{"name", name()},
                      {"inner_optimizer", serialize(*inner_)},
                      {"initial_scale", initial_scale_},
                      {"dynamic_growth_steps", growth_steps_}};
  if (!dynamic_) c["dynamic"] = false;  // tf-keras's fixed mode (Keras 3 refuses it)
  return c;
}

LossScaleOptimizer LossScaleOptimizer::from_config(const nlohmann::json& c) {
  const std::string cls = "LossScaleOptimizer";
  // Keras accepts the base optimizer's arguments at their defaults only (older files wrote them all).
  detail::check_optimizer_config_keys(c, cls, {"name", "inner_optimizer", "initial_scale", "dynamic_growth_steps", "dynamic"},
                            {"learning_rate", "weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "use_ema",
                             "ema_momentum", "ema_overwrite_frequency", "loss_scale_factor",
                             "gradient_accumulation_steps"});
  for (const char* key : {"weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "ema_overwrite_frequency",
                          "loss_scale_factor", "gradient_accumulation_steps"})
    EMBER_CHECK(!c.contains(key) || c[key].is_null(), InvalidArgument)
        << cls << ".from_config: LossScaleOptimizer does not support `" << key << "` (got " << c[key].dump()
        << "). Instead, set `" << key << "` on the `inner_optimizer`.";
  EMBER_CHECK(!detail::config_bool(c, "use_ema", false, cls) && detail::config_number(c, "ema_momentum", 0.99, cls) == 0.99,
              InvalidArgument)
      << cls << ".from_config: LossScaleOptimizer does not support `use_ema` or `ema_momentum`. Instead, set them on "
      << "the `inner_optimizer`.";
  EMBER_CHECK(c.contains("inner_optimizer") && c["inner_optimizer"].is_object(), InvalidArgument)
      << cls << ".from_config: expected 'inner_optimizer' to be a serialized optimizer "
      << "({\"class_name\", \"config\"}), got " << (c.contains("inner_optimizer") ? c["inner_optimizer"].dump() : "nothing");
  LossScaleOptimizerOptions o;
  o.dynamic = detail::config_bool(c, "dynamic", true, cls);
  o.initial_scale = detail::config_number(c, "initial_scale", o.initial_scale, cls);
  o.dynamic_growth_steps = detail::config_int(c, "dynamic_growth_steps", o.dynamic_growth_steps, cls);
  o.name = detail::config_string(c, "name", "", cls);
  return LossScaleOptimizer(deserialize(c["inner_optimizer"]), std::move(o));
}

EMBER_REGISTER_OPTIMIZER(LossScaleOptimizer);

}  // namespace ember::optimizers
