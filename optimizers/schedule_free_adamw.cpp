#include "optimizers/schedule_free_adamw.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

ScheduleFreeAdamW::ScheduleFreeAdamW(ScheduleFreeAdamWOptions o)
    : Optimizer("ScheduleFreeAdamW", base_options(o)),
      beta_1_(o.beta_1),
      beta_2_(o.beta_2),
      epsilon_(o.epsilon),
      warmup_steps_(o.warmup_steps) {}

void ScheduleFreeAdamW::build_slots(const std::vector<Variable>& vars) {
  auto slots = add_optimizer_variables(vars, {"momentum", "velocity"});
  momentums_ = std::move(slots[0]);
  velocities_ = std::move(slots[1]);
  // A copy, so the slot never shares the variable's tensor.
  for (size_t i = 0; i < vars.size(); ++i) momentums_[i].assign(vars[i].value().clone());
}

void ScheduleFreeAdamW::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  Scalar lr(learning_rate, dt);
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar beta_1 = Scalar::cast(beta_1_, dt), beta_2 = Scalar::cast(beta_2_, dt);
  const Scalar epsilon = Scalar::cast(epsilon_, dt);
  if (warmup_steps_ > 0)
    lr = lr * minimum(local_step / Scalar(static_cast<double>(warmup_steps_), dt), Scalar(1.0, dt));

  Variable& z = momentums_[index];
  Variable& v = velocities_[index];
  const Scalar bias_correction_2 = 1.0 - pow(beta_2, local_step);
  v.assign(v.value() + (ops::square(g) - v.value()) * (1.0 - beta_2).value());
  const Tensor denom = ops::sqrt(v.value() / bias_correction_2.value()) + epsilon.value();
  z.assign(z.value() - (g * lr.value()) / denom);

  const Scalar weight = 1.0 / local_step;
  const Scalar one_minus_beta_1 = 1.0 - beta_1;
  // Keras's momentum_old: the momentum as it is now, after the update (see the class comment).
  const Tensor x_old = (var.value() - z.value() * one_minus_beta_1.value()) / beta_1.value();
  const Tensor x_new = x_old * (1.0 - weight).value() + z.value() * weight.value();
  var.assign(z.value() * one_minus_beta_1.value() + x_new * beta_1.value());
}

nlohmann::json ScheduleFreeAdamW::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  c["epsilon"] = epsilon_;
  c["warmup_steps"] = warmup_steps_;
  return c;
}

ScheduleFreeAdamW ScheduleFreeAdamW::from_config(const nlohmann::json& c) {
  const std::string cls = "ScheduleFreeAdamW";
  ScheduleFreeAdamWOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"beta_1", "beta_2", "epsilon", "warmup_steps"},
                                               base_options(o)));
  o.beta_1 = detail::config_number(c, "beta_1", o.beta_1, cls);
  o.beta_2 = detail::config_number(c, "beta_2", o.beta_2, cls);
  o.epsilon = detail::config_number(c, "epsilon", o.epsilon, cls);
  o.warmup_steps = detail::config_int(c, "warmup_steps", o.warmup_steps, cls);
  return ScheduleFreeAdamW(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(ScheduleFreeAdamW);

}  // namespace ember::optimizers
