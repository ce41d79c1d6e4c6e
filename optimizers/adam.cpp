#include "optimizers/adam.h"

#include "framework/graph/trace.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/optimizer_ops.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Adam::Adam(AdamOptions o) : Adam("Adam", std::move(o)) {}

Adam::Adam(const std::string& class_name, AdamOptions o)
    : Optimizer(class_name, base_options(o)),
      beta_1_(o.beta_1),
      beta_2_(o.beta_2),
      epsilon_(o.epsilon),
      amsgrad_(o.amsgrad) {}

void Adam::build_slots(const std::vector<Variable>& vars) {
  auto slots = add_optimizer_variables(vars, {"momentum", "velocity"});
  momentums_ = std::move(slots[0]);
  velocities_ = std::move(slots[1]);
  if (amsgrad_) velocity_hats_ = add_optimizer_variables(vars, "velocity_hat");
}

double Adam::alpha(DType dt, double learning_rate) const {
  const Scalar lr(learning_rate, dt);
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar beta_1_power = pow(Scalar::cast(beta_1_, dt), local_step);
  const Scalar beta_2_power = pow(Scalar::cast(beta_2_, dt), local_step);
  return (lr * sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power)).value();
}

void Adam::update_step_factored(const Tensor& a, const Tensor& b, Variable& var, size_t index, double learning_rate) {
  // The fused pass in place, where the device has it for this dtype and nothing else holds the buffers.
  const DeviceType device = var.device().type();
  if (!amsgrad_ && supports(OpId::apply_adam_factored, device, var.dtype()) && a.device() == var.device() &&
      b.device() == var.device() && ops::factored_adam_pays(var.shape(), device)) {
    Tensor *w_now = var.exclusive_value(), *m_now = momentums_[index].exclusive_value(),
           *v_now = velocities_[index].exclusive_value();
    if (w_now && m_now && v_now) {
      ops::apply_adam_factored_in_place(*w_now, *m_now, *v_now, a, b, alpha(var.dtype(), learning_rate), beta_1_,
                                        beta_2_, epsilon_);
      return;
    }
  }
  Optimizer::update_step_factored(a, b, var, index, learning_rate);
}

void Adam::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  const Scalar alpha(this->alpha(dt, learning_rate), dt);
  Variable& m = momentums_[index];
  Variable& v = velocities_[index];
  // One fused pass where the device has it for this dtype (the same arithmetic, op for op); float16
  // variables keep the unfused ops, which round after every step as Keras does.
  if (!amsgrad_ && supports(OpId::apply_adam, var.device().type(), dt)) {
    // In place when nothing else holds the buffers (the usual case once the step's tape is gone).
    Tensor *w_now = var.exclusive_value(), *m_now = m.exclusive_value(), *v_now = v.exclusive_value();
    if (w_now && m_now && v_now) {
      ops::apply_adam_in_place(*w_now, *m_now, *v_now, g, alpha.value(), beta_1_, beta_2_, epsilon_);
      return;
    }
    ops::AdamUpdate u = ops::apply_adam(var.value(), m.value(), v.value(), g, alpha.value(), beta_1_, beta_2_, epsilon_);
    m.assign(u.momentum);
    v.assign(u.velocity);
    var.assign(u.variable);
    return;
  }
  m.assign(m.value() + (g - m.value()) * (1 - beta_1_));
  v.assign(v.value() + (ops::square(g) - v.value()) * (1 - beta_2_));
  Tensor v_used = v.value();
  if (amsgrad_) {
    Variable& v_hat = velocity_hats_[index];
    v_hat.assign(ops::maximum(v_hat.value(), v.value()));
    v_used = v_hat.value();
  }
  var.assign(var.value() - (m.value() * alpha.value()) / (ops::sqrt(v_used) + epsilon_));
}

bool Adam::fuses_update_steps(const std::vector<Tensor>& grads, const std::vector<size_t>& indices) {
  if (amsgrad_ || indices.empty()) return false;
  const Variable& first = trainable_variables()[indices[0]];
  if (!supports(OpId::apply_adam_multi, first.device().type(), first.dtype())) return false;
  for (size_t k = 0; k < indices.size(); ++k) {
    Variable var = trainable_variables()[indices[k]];  // a handle: exclusive_value looks at the value
    if (var.device() != first.device() || var.dtype() != first.dtype() || grads[k].device() != first.device() ||
        grads[k].dtype() != first.dtype())
      return false;
    // In place only: nothing else may hold the buffers (the usual case once the step's tape is gone).
    if (!var.exclusive_value() || !momentums_[indices[k]].exclusive_value() ||
        !velocities_[indices[k]].exclusive_value())
      return false;
  }
  return true;
}

void Adam::update_steps_fused(const std::vector<Tensor>& grads, const std::vector<size_t>& indices,
                              double learning_rate, const Tensor& step, const Tensor& condition) {
  std::vector<ops::AdamSlots> slots(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    Variable var = trainable_variables()[indices[k]];  // a handle: exclusive_value looks at the value
    Tensor *w = var.exclusive_value(), *m = momentums_[indices[k]].exclusive_value(),
           *v = velocities_[indices[k]].exclusive_value();
    EMBER_CHECK(w && m && v, Internal) << name() << ": variable '" << var.name()
                                       << "' or its slots gained another holder between the check and the update";
    slots[k] = {*w, *m, *v, grads[k]};
  }
  ops::apply_adam_multi_in_place(slots, step, condition, learning_rate, beta_1_, beta_2_, epsilon_);
}

bool Adam::can_update_in_graph(const std::vector<SourceGradient>& /*grads*/, const std::vector<size_t>& indices) {
  return !amsgrad_ && multi_update_supports(OpId::apply_adam_multi, indices);
}

void Adam::update_in_graph(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices,
                           const Tensor& step, const Tensor& learning_rate) {
  std::vector<ops::AdamSlots> slots;
  std::vector<Variable> updated;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Variable& var = trainable_variables()[indices[k]];
    const SourceGradient& g = grads[k];
    ops::AdamSlots s;
    if (g.factored() && g.a.dtype() == var.dtype() && var.device().is_cpu()) {
      s.a = g.a;
      s.b = g.b;
    } else {
      // As the eager update takes it: whole, in the variable's dtype.
      const Tensor value = g.materialize();
      s.gradient = value.dtype() == var.dtype() ? value : ops::cast(value, var.dtype());
    }
    {
      graph::SuspendTracing suspend;  // the buffers are the op's own, not values of the graph
      s.variable = var.value();
      s.momentum = momentums_[indices[k]].value();
      s.velocity = velocities_[indices[k]].value();
    }
    slots.push_back(std::move(s));
    updated.insert(updated.end(), {var, momentums_[indices[k]], velocities_[indices[k]]});
  }
  ops::UpdateOperands o = ops::adam_multi_operands(slots, step, Tensor::scalar<bool>(true, Device::cpu()), learning_rate);
  // No holders of the buffers but the variables: the op takes them in place.
  slots.clear();
  o.updated.clear();
  graph::update_variables(name() + ".apply", OpId::apply_adam_multi, updated, o.inputs, o.outputs,
                          MultiAdamAttrs{beta_1_, beta_2_, epsilon_}, static_cast<int>(indices.size()));
}

nlohmann::json Adam::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_1"] = beta_1_;
  c["beta_2"] = beta_2_;
  c["epsilon"] = epsilon_;
  c["amsgrad"] = amsgrad_;
  return c;
}

AdamOptions Adam::options_from_config(const nlohmann::json& c, const std::string& cls) {
  AdamOptions o;
  set_base_options(o, base_options_from_config(c, cls, {"beta_1", "beta_2", "epsilon", "amsgrad"},
                                               base_options(o)));
  o.beta_1 = detail::config_number(c, "beta_1", 0.9, cls);
  o.beta_2 = detail::config_number(c, "beta_2", 0.999, cls);
  o.epsilon = detail::config_number(c, "epsilon", 1e-7, cls);
  o.amsgrad = detail::config_bool(c, "amsgrad", false, cls);
  return o;
}

Adam Adam::from_config(const nlohmann::json& c) { return Adam(options_from_config(c, "Adam")); }

EMBER_REGISTER_OPTIMIZER(Adam);

}  // namespace ember::optimizers
