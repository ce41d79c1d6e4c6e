#include "optimizers/adagrad.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Adagrad::Adagrad(AdagradOptions o)
    : Optimizer("Adagrad", base_options(o)),
      initial_accumulator_value_(o.initial_accumulator_value),
      epsilon_(o.epsilon) {}

void Adagrad::build_slots(const std::vector<Variable>& vars) {
  accumulators_ = add_optimizer_variables(vars, "accumulator", initial_accumulator_value_);
}

void Adagrad::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const double lr = Scalar(learning_rate, var.dtype()).value();
  Variable& acc = accumulators_[index];
  acc.assign(acc.value() + ops::square(g));
  var.assign(var.value() - (g * lr) / ops::sqrt(acc.value() + epsilon_));
}

nlohmann::json Adagrad::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["initial_accumulator_value"] = initial_accumulator_value_;
  c["epsilon"] = epsilon_;
  return c;
}

Adagrad Adagrad::from_config(const nlohmann::json& c) {
  const std::string cls = "Adagrad";
  AdagradOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"initial_accumulator_value", "epsilon"},
                                               base_options(o)));
  o.initial_accumulator_value = detail::config_number(c, "initial_accumulator_value", 0.1, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  return Adagrad(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Adagrad);

}  // namespace ember::optimizers
