#include "framework/ops/optimizer_ops.h"

#include <array>
#include <set>
#include <span>
#include <string>

#include "framework/core/error.h"
#include "framework/ops/dispatch.h"

namespace ember::ops {
namespace {

// The outputs of an Adam op over inputs[0..2] (variable, momentum, velocity): in place, they view those
// buffers, which then must share none with any input (`op` and `names` for the error).
std::array<OutputSpec, 3> adam_outputs(const char* op, std::span<const Tensor> inputs, const char* const* names,
                                       bool in_place) {
  std::array<OutputSpec, 3> outputs;
  for (int i = 0; i < 3; ++i) {
    outputs[i] = {inputs[0].shape(), inputs[0].dtype(), in_place ? i : -1};
    if (!in_place) continue;
    for (size_t j = 0; j < inputs.size(); ++j)
      EMBER_CHECK(j == static_cast<size_t>(i) || inputs[i].storage() != inputs[j].storage(), InvalidArgument)
          << op << ": the " << names[i] << " shares its buffer with the " << names[j]
          << "; an update in place needs separate buffers";
  }
  return outputs;
}

// Runs apply_adam; with `in_place` the outputs view the first three inputs' buffers.
std::vector<Tensor> run_adam(const std::array<Tensor, 4>& inputs, bool in_place, double alpha, double beta_1,
                             double beta_2, double epsilon) {
  const Tensor& variable = inputs[0];
  const char* names[] = {"variable", "momentum", "velocity", "gradient"};
  for (size_t i = 1; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].shape() == variable.shape() && inputs[i].dtype() == variable.dtype(), InvalidArgument)
        << "apply_adam: " << names[i] << " has shape " << inputs[i].shape() << " and dtype " << inputs[i].dtype()
        << ", expected the variable's " << variable.shape() << " and " << variable.dtype();
  }
  return run_op(OpId::apply_adam, inputs, adam_outputs("apply_adam_in_place", inputs, names, in_place),
                AdamAttrs{alpha, 1 - beta_1, 1 - beta_2, epsilon});
}

// A fused update's learning rate: a float32 or float64 scalar.
void check_learning_rate(const char* op, const Tensor& learning_rate) {
  EMBER_CHECK(learning_rate.defined() && learning_rate.rank() == 0 &&
                  (learning_rate.dtype() == DType::Float32 || learning_rate.dtype() == DType::Float64),
              InvalidArgument)
      << op << ": the learning rate has shape "
      << (learning_rate.defined() ? learning_rate.shape().to_string() : std::string("undefined")) << " and dtype "
      << (learning_rate.defined() ? dtype_name(learning_rate.dtype()) : "none")
      << "; expected a float32 or float64 scalar";
}

}  // namespace

AdamUpdate apply_adam(const Tensor& variable, const Tensor& momentum, const Tensor& velocity, const Tensor& gradient,
                      double alpha, double beta_1, double beta_2, double epsilon) {
  std::vector<Tensor> out =
      run_adam({variable, momentum, velocity, gradient}, /*in_place=*/false, alpha, beta_1, beta_2, epsilon);
  return {out[0], out[1], out[2]};
}

void apply_adam_in_place(Tensor& variable, Tensor& momentum, Tensor& velocity, const Tensor& gradient, double alpha,
                         double beta_1, double beta_2, double epsilon) {
  run_adam({variable, momentum, velocity, gradient}, /*in_place=*/true, alpha, beta_1, beta_2, epsilon);
}

void apply_adam_factored_in_place(Tensor& variable, Tensor& momentum, Tensor& velocity, const Tensor& a,
                                  const Tensor& b, double alpha, double beta_1, double beta_2, double epsilon) {
  const Shape& s = variable.shape();
  EMBER_CHECK(s.rank() == 2 && a.rank() == 2 && b.rank() == 2 && a.shape()[0] == b.shape()[0] &&
                  a.shape()[0] >= 1 && a.shape()[0] <= kFactoredMaxRows && a.shape()[1] == s[0] && b.shape()[1] == s[1],
              InvalidArgument)
      << "apply_adam_factored: the factors have shapes " << a.shape() << " and " << b.shape() << " for a variable of shape "
      << s << "; expected (k, " << (s.rank() == 2 ? s[0] : -1) << ") and (k, " << (s.rank() == 2 ? s[1] : -1)
      << ") with 1 <= k <= " << kFactoredMaxRows;
  const std::array<Tensor, 5> inputs{variable, momentum, velocity, a, b};
  const char* names[] = {"variable", "momentum", "velocity", "factor a", "factor b"};
  for (size_t i = 1; i < inputs.size(); ++i) {
    EMBER_CHECK(inputs[i].dtype() == variable.dtype() && (i >= 3 || inputs[i].shape() == s), InvalidArgument)
        << "apply_adam_factored: the " << names[i] << " has shape " << inputs[i].shape() << " and dtype "
        << inputs[i].dtype() << "; expected the variable's " << (i >= 3 ? "dtype " : "shape and dtype ")
        << (i >= 3 ? std::string() : s.to_string() + " and ") << variable.dtype();
  }
  run_op(OpId::apply_adam_factored, inputs, adam_outputs("apply_adam_factored", inputs, names, /*in_place=*/true),
         AdamAttrs{alpha, 1 - beta_1, 1 - beta_2, epsilon});
}

UpdateOperands adam_multi_operands(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                                   const Tensor& learning_rate) {
  EMBER_CHECK(!slots.empty(), InvalidArgument) << "apply_adam_multi: no variables; expected at least one";
  EMBER_CHECK(step.rank() == 0 && step.dtype() == DType::Int64, InvalidArgument)
      << "apply_adam_multi: the step has shape " << step.shape() << " and dtype " << step.dtype()
      << "; expected an int64 scalar";
  EMBER_CHECK(condition.rank() == 0 && condition.dtype() == DType::Bool, InvalidArgument)
      << "apply_adam_multi: the condition has shape " << condition.shape() << " and dtype " << condition.dtype()
      << "; expected a bool scalar";
  check_learning_rate("apply_adam_multi", learning_rate);
  const DType dt = slots[0].variable.dtype();
  const char* names[] = {"variable", "momentum", "velocity", "gradient"};
  auto describe = [](const Tensor& t) {
    return t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape().to_string() : std::string("undefined");
  };
  UpdateOperands ops;
  std::set<const Storage*> updated;
  for (size_t k = 0; k < slots.size(); ++k) {
    const AdamSlots& s = slots[k];
    const bool factored = !s.gradient.defined() && (s.a.defined() || s.b.defined());
    const Tensor group[] = {s.variable, s.momentum, s.velocity, s.gradient};
    for (int i = 0; i < (factored ? 3 : 4); ++i) {
      EMBER_CHECK(group[i].defined() && group[i].shape() == s.variable.shape() && group[i].dtype() == dt,
                  InvalidArgument)
          << "apply_adam_multi: variable " << k << "'s " << names[i] << " is " << describe(group[i])
          << ", expected the variable's shape " << s.variable.shape() << " and the first variable's dtype " << dt;
    }
    if (factored) {
      const Shape& v = s.variable.shape();
      EMBER_CHECK(s.a.defined() && s.b.defined() && s.a.dtype() == dt && s.b.dtype() == dt && v.rank() == 2 &&
                      s.a.rank() == 2 && s.b.rank() == 2 && s.a.shape()[0] == s.b.shape()[0] && s.a.shape()[0] >= 1 &&
                      s.a.shape()[0] <= kFactoredMaxRows && s.a.shape()[1] == v[0] &&
                      s.b.shape()[1] == v[1],
                  InvalidArgument)
          << "apply_adam_multi: variable " << k << "'s gradient factors are " << describe(s.a) << " and "
          << describe(s.b) << " for a variable of shape " << v << "; expected " << dt << " (k, "
          << (v.rank() == 2 ? v[0] : -1) << ") and (k, " << (v.rank() == 2 ? v[1] : -1) << ") with 1 <= k <= "
          << kFactoredMaxRows;
    } else {
      EMBER_CHECK(!s.a.defined() && !s.b.defined(), InvalidArgument)
          << "apply_adam_multi: variable " << k << " has both a gradient and its factors; expected one of them";
    }
    for (int i = 0; i < 3; ++i) {
      EMBER_CHECK(updated.insert(group[i].storage().get()).second, InvalidArgument)
          << "apply_adam_multi: variable " << k << "'s " << names[i]
          << " shares its buffer with another updated tensor; an update in place needs separate buffers";
      ops.outputs.push_back({s.variable.shape(), dt, static_cast<int>(ops.updated.size())});
      ops.updated.push_back(group[i]);
    }
    ops.inputs.insert(ops.inputs.end(), {s.gradient, s.a, s.b});
  }
  for (const AdamSlots& s : slots)
    for (const Tensor* g : {&s.gradient, &s.a, &s.b})
      EMBER_CHECK(!g->defined() || !updated.count(g->storage().get()), InvalidArgument)
          << "apply_adam_multi: a gradient shares its buffer with an updated tensor; an update in place needs "
          << "separate buffers";
  ops.inputs.insert(ops.inputs.end(), {step, condition, learning_rate});
  return ops;
}

void apply_adam_multi_in_place(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                               const Tensor& learning_rate, double beta_1, double beta_2, double epsilon) {
  UpdateOperands o = adam_multi_operands(slots, step, condition, learning_rate);
  // The updated tensors first: the first input's dtype chooses the kernel.
  o.updated.insert(o.updated.end(), o.inputs.begin(), o.inputs.end());
  run_op(OpId::apply_adam_multi, o.updated, o.outputs, MultiAdamAttrs{beta_1, beta_2, epsilon});
}

void apply_adam_multi_in_place(const std::vector<AdamSlots>& slots, const Tensor& step, const Tensor& condition,
                               double learning_rate, double beta_1, double beta_2, double epsilon) {
  apply_adam_multi_in_place(slots, step, condition, Tensor::scalar<double>(learning_rate, Device::cpu()), beta_1, beta_2,
                            epsilon);
}

UpdateOperands sgd_multi_operands(const std::vector<SgdSlots>& slots, const Tensor& condition,
                                  const Tensor& learning_rate, double momentum) {
  EMBER_CHECK(!slots.empty(), InvalidArgument) << "apply_sgd_multi: no variables; expected at least one";
  EMBER_CHECK(condition.rank() == 0 && condition.dtype() == DType::Bool, InvalidArgument)
      << "apply_sgd_multi: the condition has shape " << condition.shape() << " and dtype " << condition.dtype()
      << "; expected a bool scalar";
  check_learning_rate("apply_sgd_multi", learning_rate);
  const bool has_momentum = momentum != 0;
  const DType dt = slots[0].variable.dtype();
  const char* names[] = {"variable", "momentum", "gradient"};
  UpdateOperands ops;
  std::set<const Storage*> updated;
  for (size_t k = 0; k < slots.size(); ++k) {
    const SgdSlots& s = slots[k];
    const Tensor group[] = {s.variable, s.momentum, s.gradient};
    for (int i = 0; i < 3; ++i) {
      if (i == 1 && !has_momentum) continue;
      EMBER_CHECK(group[i].defined() && group[i].shape() == s.variable.shape() && group[i].dtype() == dt,
                  InvalidArgument)
          << "apply_sgd_multi: variable " << k << "'s " << names[i] << " is "
          << (group[i].defined() ? std::string(dtype_name(group[i].dtype())) + " " + group[i].shape().to_string()
                              : std::string("undefined"))
          << ", expected the variable's shape " << s.variable.shape() << " and the first variable's dtype " << dt;
      if (i < 2) {
        EMBER_CHECK(updated.insert(group[i].storage().get()).second, InvalidArgument)
            << "apply_sgd_multi: variable " << k << "'s " << names[i]
            << " shares its buffer with another updated tensor; an update in place needs separate buffers";
        ops.outputs.push_back({s.variable.shape(), dt, static_cast<int>(ops.updated.size())});
        ops.updated.push_back(group[i]);
      }
    }
    ops.inputs.push_back(s.gradient);
  }
  for (const SgdSlots& s : slots)
    EMBER_CHECK(!updated.count(s.gradient.storage().get()), InvalidArgument)
        << "apply_sgd_multi: a gradient shares its buffer with an updated tensor; an update in place needs "
        << "separate buffers";
  ops.inputs.insert(ops.inputs.end(), {condition, learning_rate});
  return ops;
}

void apply_sgd_multi_in_place(const std::vector<SgdSlots>& slots, const Tensor& condition, const Tensor& learning_rate,
                              double momentum, bool nesterov) {
  UpdateOperands o = sgd_multi_operands(slots, condition, learning_rate, momentum);
  // The updated tensors first: the first input's dtype chooses the kernel.
  o.updated.insert(o.updated.end(), o.inputs.begin(), o.inputs.end());
  run_op(OpId::apply_sgd_multi, o.updated, o.outputs, MultiSgdAttrs{momentum, nesterov});
}

void apply_sgd_multi_in_place(const std::vector<SgdSlots>& slots, const Tensor& condition, double learning_rate,
                              double momentum, bool nesterov) {
  apply_sgd_multi_in_place(slots, condition, Tensor::scalar<double>(learning_rate, Device::cpu()), momentum, nesterov);
}

UnscaledGradients unscale_gradients(const std::vector<Tensor>& gradients, const Tensor& scale) {
  EMBER_CHECK(!gradients.empty(), InvalidArgument) << "unscale_gradients: no gradients; expected at least one";
  EMBER_CHECK(scale.defined() && scale.rank() == 0 && scale.dtype() == DType::Float32, InvalidArgument)
      << "unscale_gradients: the scale has shape " << (scale.defined() ? scale.shape().to_string() : "undefined")
      << " and dtype " << (scale.defined() ? dtype_name(scale.dtype()) : "none") << "; expected a float32 scalar";
  std::vector<Tensor> inputs;
  std::vector<OutputSpec> outputs;
  inputs.reserve(gradients.size() + 1);
  outputs.reserve(gradients.size() + 1);
  for (size_t k = 0; k < gradients.size(); ++k) {
    const Tensor& g = gradients[k];
    const DType dt = g.defined() ? g.dtype() : DType::Bool;
    EMBER_CHECK(dt == DType::Float16 || dt == DType::BFloat16 || dt == DType::Float32 || dt == DType::Float64,
                InvalidArgument)
        << "unscale_gradients: gradient " << k << " is "
        << (g.defined() ? std::string(dtype_name(dt)) : std::string("undefined"))
        << "; expected a float16, bfloat16, float32 or float64 tensor";
    inputs.push_back(g);
    outputs.push_back({g.shape(), dt == DType::Float64 ? DType::Float64 : DType::Float32});
  }
  inputs.push_back(scale);
  outputs.push_back({Shape{}, DType::Bool});
  std::vector<Tensor> out = run_op(OpId::unscale_gradients, inputs, outputs);
  Tensor finite = std::move(out.back());
  out.pop_back();
  return {std::move(out), std::move(finite)};
}

LossScaleUpdate update_loss_scale(const Tensor& scale, const Tensor& counter, const Tensor& finite,
                                  int64_t growth_steps) {
  auto describe = [](const Tensor& t) {
    return t.defined() ? std::string(dtype_name(t.dtype())) + " " + t.shape().to_string() : std::string("undefined");
  };
  EMBER_CHECK(scale.defined() && scale.rank() == 0 && scale.dtype() == DType::Float32 && counter.defined() &&
                  counter.rank() == 0 && counter.dtype() == DType::Int64 && finite.defined() && finite.rank() == 0 &&
                  finite.dtype() == DType::Bool,
              InvalidArgument)
      << "update_loss_scale: got the scale " << describe(scale) << ", the counter " << describe(counter)
      << " and the flag " << describe(finite) << "; expected float32, int64 and bool scalars";
  EMBER_CHECK(growth_steps >= 1, InvalidArgument)
      << "update_loss_scale: growth_steps must be at least 1, got " << growth_steps;
  const std::array<Tensor, 3> inputs{scale, counter, finite};
  const std::array<OutputSpec, 2> outputs{OutputSpec{Shape{}, DType::Float32}, OutputSpec{Shape{}, DType::Int64}};
  std::vector<Tensor> out = run_op(OpId::update_loss_scale, inputs, outputs, LossScaleAttrs{growth_steps});
  return {out[0], out[1]};
}

bool factored_adam_pays(const Shape& variable, DeviceType device) {
  return device != DeviceType::CPU || (variable.rank() == 2 && variable[1] >= 16);
}

}  // namespace ember::ops
