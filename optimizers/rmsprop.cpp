#include "optimizers/rmsprop.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

RMSprop::RMSprop(RMSpropOptions o)
    : Optimizer("RMSprop", base_options(o)),
      rho_(o.rho),
      momentum_(o.momentum),
      epsilon_(o.epsilon),
      centered_(o.centered) {}

void RMSprop::build_slots(const std::vector<Variable>& vars) {
  velocities_ = add_optimizer_variables(vars, "velocity");
  if (momentum_ > 0) momentums_ = add_optimizer_variables(vars, "momentum");
  if (centered_) average_gradients_ = add_optimizer_variables(vars, "average_gradient");
}

void RMSprop::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const double lr = Scalar(learning_rate, var.dtype()).value();
  Variable& velocity = velocities_[index];
  velocity.assign(velocity.value() * rho_ + ops::square(g) * (1 - rho_));
  Tensor denominator;
  if (centered_) {
    Variable& average = average_gradients_[index];
    average.assign(average.value() * rho_ + g * (1 - rho_));
    denominator = velocity.value() - ops::square(average.value()) + epsilon_;
  } else {
    denominator = velocity.value() + epsilon_;
  }
  Tensor increment = (g * lr) / ops::sqrt(denominator);
  if (momentum_ > 0) {
    Variable& m = momentums_[index];
    m.assign(m.value() * momentum_ + increment);
    var.assign(var.value() - m.value());
  } else {
    var.assign(var.value() - increment);
  }
}

nlohmann::json RMSprop::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["rho"] = rho_;
  c["momentum"] = momentum_;
  c["epsilon"] = epsilon_;
  c["centered"] = centered_;
  return c;
}

RMSprop RMSprop::from_config(const nlohmann::json& c) {
  const std::string cls = "RMSprop";
  RMSpropOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"rho", "momentum", "epsilon", "centered"},
                                               base_options(o)));
  o.rho = detail::config_number(c, "rho", 0.9, cls);
  o.momentum = detail::config_number(c, "momentum", 0.0, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  o.centered = detail::config_bool(c, "centered", false, cls);
  return RMSprop(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(RMSprop);

}  // namespace ember::optimizers
