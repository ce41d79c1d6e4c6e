#include "optimizers/adadelta.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Adadelta::Adadelta(AdadeltaOptions o) : Optimizer("Adadelta", base_options(o)), rho_(o.rho), epsilon_(o.epsilon) {}

void Adadelta::build_slots(const std::vector<Variable>& vars) {
  auto slots = add_optimizer_variables(vars, {"accumulated_grad", "accumulated_delta_var"});
  accumulated_grads_ = std::move(slots[0]);
  accumulated_delta_vars_ = std::move(slots[1]);
}

void Adadelta::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const double lr = Scalar(learning_rate, var.dtype()).value();
  Variable& acc_grad = accumulated_grads_[index];
  Variable& acc_delta = accumulated_delta_vars_[index];
  auto rms = [&](const Tensor& x) { return ops::sqrt(x + epsilon_); };
  acc_grad.assign(acc_grad.value() * rho_ + ops::square(g) * (1 - rho_));
  Tensor delta_var = -((rms(acc_delta.value()) * g) / rms(acc_grad.value()));
  acc_delta.assign(acc_delta.value() * rho_ + ops::square(delta_var) * (1 - rho_));
  var.assign(var.value() + delta_var * lr);
}

nlohmann::json Adadelta::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["rho"] = rho_;
  c["epsilon"] = epsilon_;
  return c;
}

Adadelta Adadelta::from_config(const nlohmann::json& c) {
  const std::string cls = "Adadelta";
  AdadeltaOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"rho", "epsilon"}, base_options(o)));
  o.rho = detail::config_number(c, "rho", 0.95, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  return Adadelta(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Adadelta);

}  // namespace ember::optimizers
