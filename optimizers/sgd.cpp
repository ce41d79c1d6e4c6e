#include "optimizers/sgd.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

SGD::SGD(SGDOptions o) : Optimizer("SGD", base_options(o)), momentum_(o.momentum), nesterov_(o.nesterov) {
  EMBER_CHECK(momentum_ >= 0 && momentum_ <= 1, InvalidArgument)
      << "SGD: `momentum` must be a float between [0, 1]. Received: momentum=" << momentum_;
}

void SGD::build_slots(const std::vector<Variable>& vars) {
  if (momentum_ != 0) momentums_ = add_optimizer_variables(vars, "momentum");
}

void SGD::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const double lr = Scalar(learning_rate, var.dtype()).value();
  if (momentum_ == 0) {
    var.assign(var.value() - g * lr);
    return;
  }
  Variable& m = momentums_[index];
  const double momentum = Scalar::cast(momentum_, var.dtype()).value();
  m.assign(m.value() * momentum - g * lr);
  if (nesterov_)
    var.assign(var.value() + (m.value() * momentum - g * lr));
  else
    var.assign(var.value() + m.value());
}

nlohmann::json SGD::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["momentum"] = momentum_;
  c["nesterov"] = nesterov_;
  return c;
}

SGD SGD::from_config(const nlohmann::json& c) {
  const std::string cls = "SGD";
  SGDOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"momentum", "nesterov"}, base_options(o)));
  o.momentum = detail::config_number(c, "momentum", 0.0, cls);
  o.nesterov = detail::config_bool(c, "nesterov", false, cls);
  return SGD(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(SGD);

}  // namespace ember::optimizers
