#include "optimizers/adamax.h"

#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Adamax::Adamax(AdamaxOptions o)
    : Optimizer("Adamax", base_options(o)), beta_1_(o.beta_1), beta_2_(o.beta_2), epsilon_(o.epsilon) {}

void Adamax::build_slots(const std::vector<Variable>& vars) {
  auto slots = add_optimizer_variables(vars, {"momentum", "norm"});
  m_ = std::move(slots[0]);
  u_ = std::move(slots[1]);
}

void Adamax::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  const double lr = Scalar(learning_rate, dt).value();
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar beta_1_power = pow(Scalar::cast(beta_1_, dt), local_step);
  Variable& m = m_[index];
  Variable& u = u_[index];
  m.assign(m.value() + (g - m.value()) * (1 - beta_1_));
  u.assign(ops::maximum(u.value() * beta_2_, ops::abs(g)));
  var.assign(var.value() - (m.value() * lr) / ((u.value() + epsilon_) * (1.0 - beta_1_power).value()));
}

nlohmann::json Adamax::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  c["epsilon"] = epsilon_;
  return c;
}

Adamax Adamax::from_config(const nlohmann::json& c) {
  const std::string cls = "Adamax";
  AdamaxOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"beta_1", "beta_2", "epsilon"}, base_options(o)));
  o.beta_1 = detail::config_number(c, "beta_1", 0.9, cls);
  o.beta_2 = detail::config_number(c, "beta_2", 0.999, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  return Adamax(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Adamax);

}  // namespace ember::optimizers
