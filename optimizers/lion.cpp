#include "optimizers/lion.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Lion::Lion(LionOptions o) : Optimizer("Lion", base_options(o)), beta_1_(o.beta_1), beta_2_(o.beta_2) {
  EMBER_CHECK(beta_1_ > 0 && beta_1_ <= 1, InvalidArgument)
      << "Lion: Argument `beta_1` must be in the [0, 1] range. Otherwise, the optimizer degenerates to SignSGD. "
      << "Received: beta_1=" << beta_1_ << ".";
}

void Lion::build_slots(const std::vector<Variable>& vars) { momentums_ = add_optimizer_variables(vars, "momentum"); }

void Lion::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  const double lr = Scalar(learning_rate, dt).value();
  const Scalar beta_1 = Scalar::cast(beta_1_, dt);
  const Scalar beta_2 = Scalar::cast(beta_2_, dt);
  Variable& m = momentums_[index];
  var.assign(var.value() - ops::sign(m.value() * beta_1.value() + g * (1.0 - beta_1).value()) * lr);
  m.assign(m.value() * beta_2.value() + g * (1.0 - beta_2).value());
}

nlohmann::json Lion::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  return c;
}

Lion Lion::from_config(const nlohmann::json& c) {
  const std::string cls = "Lion";
  LionOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"beta_1", "beta_2"}, base_options(o)));
  o.beta_1 = detail::config_number(c, "beta_1", 0.9, cls);
  o.beta_2 = detail::config_number(c, "beta_2", 0.99, cls);
  return Lion(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Lion);

}  // namespace ember::optimizers
