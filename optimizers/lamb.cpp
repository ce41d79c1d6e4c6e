#include "optimizers/lamb.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Lamb::Lamb(LambOptions o)
    : Optimizer("Lamb", base_options(o)), beta_1_(o.beta_1), beta_2_(o.beta_2), epsilon_(o.epsilon) {}

void Lamb::build_slots(const std::vector<Variable>& vars) {
  auto slots = add_optimizer_variables(vars, {"momentum", "velocity"});
  momentums_ = std::move(slots[0]);
  velocities_ = std::move(slots[1]);
}

void Lamb::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  const double lr = Scalar(learning_rate, dt).value();
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar beta_1_power = pow(Scalar::cast(beta_1_, dt), local_step);
  const Scalar beta_2_power = pow(Scalar::cast(beta_2_, dt), local_step);
  Variable& m = momentums_[index];
  Variable& v = velocities_[index];
  m.assign(m.value() + (g - m.value()) * (1 - beta_1_));
  v.assign(v.value() + (ops::square(g) - v.value()) * (1 - beta_2_));

  const Tensor m_t_hat = m.value() / (1.0 - beta_1_power).value();
  const Tensor v_sqrt = ops::sqrt(v.value() / (1.0 - beta_2_power).value()) + epsilon_;
  const Tensor update = m_t_hat / v_sqrt;
  // The trust ratio stays a 0-d tensor on the variable's device: no host round trip per variable.
  const Tensor w_norm = ops::sqrt(ops::reduce_sum(ops::square(var.value())));
  const Tensor g_norm = ops::sqrt(ops::reduce_sum(ops::square(update)));
  const Tensor zero = Tensor::scalar_of(0, dt, Device::cpu()), one = Tensor::scalar_of(1, dt, Device::cpu());
  const Tensor ratio =
      ops::where(ops::greater(w_norm, zero), ops::where(ops::greater(g_norm, zero), w_norm / g_norm, one), one);
  var.assign(var.value() - ratio * lr * update);
}

nlohmann::json Lamb::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  c["epsilon"] = epsilon_;
  return c;
}

Lamb Lamb::from_config(const nlohmann::json& c) {
  const std::string cls = "Lamb";
  LambOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"beta_1", "beta_2", "epsilon"}, base_options(o)));
  o.beta_1 = detail::config_number(c, "beta_1", 0.9, cls);
  o.beta_2 = detail::config_number(c, "beta_2", 0.999, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  return Lamb(std::move(o));
}

// Keras 3.15 leaves Lamb out of keras.optimizers.ALL_OBJECTS, so there keras.optimizers.get("lamb") fails and
// only the module-qualified form deserializes; here both work.
EMBER_REGISTER_OPTIMIZER(Lamb);

}  // namespace ember::optimizers
