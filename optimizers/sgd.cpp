#include "optimizers/sgd.h"

#include "framework/graph/trace.h"
#include "framework/ops/dispatch.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/optimizer_ops.h"
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

bool SGD::fuses_update_steps(const std::vector<Tensor>& grads, const std::vector<size_t>& indices) {
  if (indices.empty()) return false;
  const Variable& first = trainable_variables()[indices[0]];
  if (!supports(OpId::apply_sgd_multi, first.device().type(), first.dtype())) return false;
  for (size_t k = 0; k < indices.size(); ++k) {
    Variable var = trainable_variables()[indices[k]];  // a handle: exclusive_value looks at the value
    if (var.device() != first.device() || var.dtype() != first.dtype() || grads[k].device() != first.device() ||
        grads[k].dtype() != first.dtype())
      return false;
    // In place only: nothing else may hold the buffers.
    if (!var.exclusive_value() || (momentum_ != 0 && !momentums_[indices[k]].exclusive_value())) return false;
  }
  return true;
}

void SGD::update_steps_fused(const std::vector<Tensor>& grads, const std::vector<size_t>& indices,
                             double learning_rate, const Tensor& /*step*/, const Tensor& condition) {
  std::vector<ops::SgdSlots> slots(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    Variable var = trainable_variables()[indices[k]];
    Tensor* w = var.exclusive_value();
    Tensor* m = momentum_ != 0 ? momentums_[indices[k]].exclusive_value() : nullptr;
    EMBER_CHECK(w && (m || momentum_ == 0), Internal)
        << name() << ": variable '" << var.name() << "' or its momentum gained another holder between the check and "
        << "the update";
    slots[k] = {*w, m ? *m : Tensor(), grads[k]};
  }
  ops::apply_sgd_multi_in_place(slots, condition, learning_rate, momentum_, nesterov_);
}

bool SGD::can_update_in_graph(const std::vector<SourceGradient>& /*grads*/, const std::vector<size_t>& indices) {
  return multi_update_supports(OpId::apply_sgd_multi, indices);
}

void SGD::update_in_graph(const std::vector<SourceGradient>& grads, const std::vector<size_t>& indices,
                          const Tensor& /*step*/, const Tensor& learning_rate) {
  std::vector<ops::SgdSlots> slots;
  std::vector<Variable> updated;
  for (size_t k = 0; k < indices.size(); ++k) {
    const Variable& var = trainable_variables()[indices[k]];
    // As the eager update takes the gradient: whole, in the variable's dtype.
    const Tensor value = grads[k].materialize();
    ops::SgdSlots s{Tensor(), Tensor(), value.dtype() == var.dtype() ? value : ops::cast(value, var.dtype())};
    {
      graph::SuspendTracing suspend;  // the buffers are the op's own, not values of the graph
      s.variable = var.value();
      if (momentum_ != 0) s.momentum = momentums_[indices[k]].value();
    }
    slots.push_back(std::move(s));
    updated.push_back(var);
    if (momentum_ != 0) updated.push_back(momentums_[indices[k]]);
  }
  ops::UpdateOperands o =
      ops::sgd_multi_operands(slots, Tensor::scalar<bool>(true, Device::cpu()), learning_rate, momentum_);
  // No holders of the buffers but the variables: the op takes them in place.
  slots.clear();
  o.updated.clear();
  graph::update_variables(name() + ".apply", OpId::apply_sgd_multi, updated, o.inputs, o.outputs,
                          MultiSgdAttrs{momentum_, nesterov_}, 0);
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
