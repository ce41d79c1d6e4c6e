#include "optimizers/nadam.h"

#include "framework/core/names.h"  // unique_layer_name: Keras auto-names the unnamed u_product variable
#include "framework/ops/elementwise.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Nadam::Nadam(NadamOptions o)
    : Optimizer("Nadam", base_options(o)), beta_1_(o.beta_1), beta_2_(o.beta_2), epsilon_(o.epsilon) {}

void Nadam::build_slots(const std::vector<Variable>& vars) {
  auto slots = add_optimizer_variables(vars, {"momentum", "velocity"});
  momentums_ = std::move(slots[0]);
  velocities_ = std::move(slots[1]);
  // Keras creates it unnamed (so "<optimizer>/variable", "variable_1", ...) in the first variable's dtype.
  const DType dt = vars.empty() ? DType::Float32 : vars.front().dtype();
  u_product_ = add_variable(Tensor::scalar_of(1.0, dt, vars.empty() ? Device::cpu() : vars.front().device()),
                            unique_layer_name("variable"));
}

void Nadam::before_update_steps(double) {
  // u_product *= beta_1 * (1 - 0.5 * 0.96^t), in the variable's dtype, once per step before any update.
  const DType dt = u_product_.dtype();
  // The host's copy while the variable holds the value it came from (a GPU read drains the queue).
  if (!u_product_.value().is_same(u_product_seen_))
    u_product_value_ = ops::cast(u_product_.value(), DType::Float64).to(Device::cpu()).item<double>();
  const Scalar current(u_product_value_, dt);
  const Scalar t(static_cast<double>(current_step() + 1), dt);
  const Scalar updated = current * beta_1_ * (1.0 - 0.5 * pow(0.96, t));
  u_product_.assign(Tensor::scalar_of(updated.value(), dt, u_product_.device()));
  u_product_value_ = updated.value();
  u_product_seen_ = u_product_.value();
}

void Nadam::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  const Scalar lr(learning_rate, dt);
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar next_step(static_cast<double>(current_step() + 2), dt);
  const Scalar decay = Scalar::cast(0.96, dt);
  const Scalar beta_1 = Scalar::cast(beta_1_, dt);
  const Scalar beta_2 = Scalar::cast(beta_2_, dt);
  const Scalar u_t = beta_1 * (1.0 - 0.5 * pow(decay, local_step));
  const Scalar u_t_1 = beta_1 * (1.0 - 0.5 * pow(decay, next_step));
  const Scalar u_product_t(u_product_value_, dt);
  const Scalar u_product_t_1 = u_product_t * u_t_1;
  const Scalar beta_2_power = pow(beta_2, local_step);
  Variable& m = momentums_[index];
  Variable& v = velocities_[index];
  m.assign(m.value() + (g - m.value()) * (1.0 - beta_1).value());
  v.assign(v.value() + (ops::square(g) - v.value()) * (1.0 - beta_2).value());
  Tensor m_hat = (m.value() * u_t_1.value()) / (1.0 - u_product_t_1).value() +
                 (g * (1.0 - u_t).value()) / (1.0 - u_product_t).value();
  Tensor v_hat = v.value() / (1.0 - beta_2_power).value();
  var.assign(var.value() - (m_hat * lr.value()) / (ops::sqrt(v_hat) + epsilon_));
}

nlohmann::json Nadam::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  c["epsilon"] = epsilon_;
  return c;
}

Nadam Nadam::from_config(const nlohmann::json& c) {
  const std::string cls = "Nadam";
  NadamOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"beta_1", "beta_2", "epsilon"}, base_options(o)));
  o.beta_1 = detail::config_number(c, "beta_1", 0.9, cls);
  o.beta_2 = detail::config_number(c, "beta_2", 0.999, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  return Nadam(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Nadam);

}  // namespace ember::optimizers
