#include "optimizers/ftrl.h"

#include "framework/core/python_format.h"
#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Ftrl::Ftrl(FtrlOptions o)
    : Optimizer("Ftrl", base_options(o)),
      learning_rate_power_(o.learning_rate_power),
      initial_accumulator_value_(o.initial_accumulator_value),
      l1_(o.l1_regularization_strength),
      l2_(o.l2_regularization_strength),
      l2_shrinkage_(o.l2_shrinkage_regularization_strength),
      beta_(o.beta) {
  EMBER_CHECK(initial_accumulator_value_ >= 0.0, InvalidArgument)
      << "Ftrl: `initial_accumulator_value` needs to be positive or zero. Received: initial_accumulator_value="
      << python_float_repr(initial_accumulator_value_) << ".";
  EMBER_CHECK(learning_rate_power_ <= 0.0, InvalidArgument)
      << "Ftrl: `learning_rate_power` needs to be negative or zero. Received: learning_rate_power="
      << python_float_repr(learning_rate_power_) << ".";
  EMBER_CHECK(l1_ >= 0.0, InvalidArgument)
      << "Ftrl: `l1_regularization_strength` needs to be positive or zero. Received: l1_regularization_strength="
      << python_float_repr(l1_) << ".";
  EMBER_CHECK(l2_ >= 0.0, InvalidArgument)
      << "Ftrl: `l2_regularization_strength` needs to be positive or zero. Received: l2_regularization_strength="
      << python_float_repr(l2_) << ".";
  EMBER_CHECK(l2_shrinkage_ >= 0.0, InvalidArgument)
      << "Ftrl: `l2_shrinkage_regularization_strength` needs to be positive or zero. "
      << "Received: l2_shrinkage_regularization_strength=" << python_float_repr(l2_shrinkage_) << ".";
}

void Ftrl::build_slots(const std::vector<Variable>& vars) {
  // Interleaved per variable (accumulator, linear), as Keras's add_optimizer_variables creates them.
  for (const Variable& v : vars) {
    accumulators_.push_back(add_variable_from_reference(v, "accumulator", initial_accumulator_value_));
    linears_.push_back(add_variable_from_reference(v, "linear"));
  }
}

void Ftrl::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  const Scalar lr(learning_rate, dt);
  // Keras: l2_reg + beta / (2.0 * lr), a tensor of the variable's dtype (Python numbers take its dtype).
  const Scalar l2_reg = Scalar(l2_, dt) + Scalar(beta_, dt) / (2.0 * lr);
  const Tensor power = Tensor::scalar_of(-learning_rate_power_, dt, Device::cpu());
  Variable& accum = accumulators_[index];
  Variable& linear = linears_[index];

  const Tensor grad_to_use = g + var.value() * (2 * l2_shrinkage_);
  const Tensor new_accum = accum.value() + ops::square(g);
  const Tensor new_accum_power = ops::pow(new_accum, power);
  const Tensor sigma = (new_accum_power - ops::pow(accum.value(), power)) / lr.value();
  linear.assign(linear.value() + (grad_to_use - sigma * var.value()));
  const Tensor quadratic = new_accum_power / lr.value() + (2 * l2_reg).value();
  const Tensor linear_clipped = ops::clip_by_value(linear.value(), -l1_, l1_);
  var.assign((linear_clipped - linear.value()) / quadratic);
  accum.assign(new_accum);
}

nlohmann::json Ftrl::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["learning_rate_power"] = learning_rate_power_;
  c["initial_accumulator_value"] = initial_accumulator_value_;
  c["l1_regularization_strength"] = l1_;
  c["l2_regularization_strength"] = l2_;
  c["l2_shrinkage_regularization_strength"] = l2_shrinkage_;
  c["beta"] = beta_;
  return c;
}

Ftrl Ftrl::from_config(const nlohmann::json& c) {
  const std::string cls = "Ftrl";
  FtrlOptions o;
  set_base_options(o, base_options_from_config(c, cls,
                                               {"learning_rate_power", "initial_accumulator_value",
                                                "l1_regularization_strength", "l2_regularization_strength",
                                                "l2_shrinkage_regularization_strength", "beta"},
                                               base_options(o)));
  o.learning_rate_power = detail::config_number(c, "learning_rate_power", -0.5, cls);
  o.initial_accumulator_value = detail::config_number(c, "initial_accumulator_value", 0.1, cls);
  o.l1_regularization_strength = detail::config_number(c, "l1_regularization_strength", 0.0, cls);
  o.l2_regularization_strength = detail::config_number(c, "l2_regularization_strength", 0.0, cls);
  o.l2_shrinkage_regularization_strength = detail::config_number(c, "l2_shrinkage_regularization_strength", 0.0, cls);
  o.beta = detail::config_number(c, "beta", 0.0, cls);
  return Ftrl(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Ftrl);

}  // namespace ember::optimizers
