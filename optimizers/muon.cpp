#include "optimizers/muon.h"

#include <algorithm>
#include <cmath>

#include "framework/core/strings.h"
#include "framework/ops/array.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/linalg.h"
#include "framework/ops/reduce.h"
#include "optimizers/config_util.h"
#include "optimizers/name_pattern.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

Muon::Muon(MuonOptions o) : Optimizer("Muon", base_options(o)), o_(std::move(o)) {}

bool Muon::should_use_adamw(const Variable& variable) const {
  if (variable.shape().rank() != 2) return true;
  if (o_.exclude_embeddings && ascii_lower(variable.name()).find("embedding") != std::string::npos) return true;
  for (const std::string& keyword : o_.exclude_layers)
    if (detail::NamePattern(keyword, name() + ": exclude_layers").search(variable.name())) return true;
  return false;
}

void Muon::build_slots(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    const bool adamw = should_use_adamw(var);
    adamw_.push_back(adamw);
    momentums_.push_back(add_variable_from_reference(var, "momentum"));
    velocities_.push_back(adamw ? add_variable_from_reference(var, "velocity") : Variable());
  }
}

void Muon::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  if (adamw_[index])
    adamw_step(g, var, index, learning_rate);
  else
    muon_step(g, var, index, learning_rate);
}

Tensor Muon::newton_schulz(const Tensor& g) const {
  const bool tall = g.shape()[0] > g.shape()[1];
  Tensor x = tall ? ops::transpose(g) : g;
  // Scaled to Frobenius norm (just under) 1, so the spectral norm is at most 1.
  x = x / (ops::sqrt(ops::reduce_sum(ops::square(x))) + 1e-7);
  for (int64_t i = 0; i < o_.ns_steps; ++i) {
    // x @ x^T with x^T materialised, as Keras writes it: the same sums, in the same order, as TF.
    const Tensor a = ops::matmul(x, ops::transpose(x));
    // Keras writes `b * temp_a + c * temp_a @ temp_a`: Python reads the second term as (c * A) @ A.
    const Tensor b = a * o_.muon_b + ops::matmul(a * o_.muon_c, a);
    x = x * o_.muon_a + ops::matmul(b, x);
  }
  return tall ? ops::transpose(x) : x;
}

void Muon::muon_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  Variable& m = momentums_[index];
  m.assign(m.value() + (g + m.value() * (o_.momentum - 1)));
  const Tensor x = o_.nesterov ? g + m.value() * o_.momentum : m.value();
  // learning_rate is a float32 number: the same in any dtype it is widened to.
  Tensor step = newton_schulz(x) * learning_rate;
  if (o_.rms_rate) {
    // Keras's sqrt(maximum(rows, cols)) is an int32 maximum's float32 square root.
    const int64_t larger = std::max(var.shape()[0], var.shape()[1]);
    const float root = std::sqrt(static_cast<float>(larger));
    step = step * static_cast<double>(root) * *o_.rms_rate;
  }
  var.assign(var.value() - step);
}

void Muon::adamw_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  // learning_rate * adam_lr_ratio is a float32 product, then cast to the variable's dtype.
  const Scalar lr((Scalar(learning_rate, DType::Float32) * o_.adam_lr_ratio).value(), dt);
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar beta_1_power = pow(Scalar::cast(o_.adam_beta_1, dt), local_step);
  const Scalar beta_2_power = pow(Scalar::cast(o_.adam_beta_2, dt), local_step);
  const Scalar alpha = lr * sqrt(1.0 - beta_2_power) / (1.0 - beta_1_power);
  Variable& m = momentums_[index];
  Variable& v = velocities_[index];
  m.assign(m.value() + (g - m.value()) * (1 - o_.adam_beta_1));
  v.assign(v.value() + (ops::square(g) - v.value()) * (1 - o_.adam_beta_2));
  var.assign(var.value() - (m.value() * alpha.value()) / (ops::sqrt(v.value()) + o_.epsilon));
}

std::optional<double> Muon::weight_decay_for(size_t index) {
  // Keras's Muon hands _use_weight_decay the Keras variable, whose `name` is the last path component.
  if (!use_weight_decay(index, detail::keras_variable_name(trainable_variables()[index].name()))) return std::nullopt;
  return adamw_[index] ? o_.adam_weight_decay : base().weight_decay;
}

nlohmann::json Muon::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["adam_beta_1"] = o_.adam_beta_1;
  c["adam_beta_2"] = o_.adam_beta_2;
  c["epsilon"] = o_.epsilon;
  c["exclude_layers"] = o_.exclude_layers;
  c["muon_a"] = o_.muon_a;
  c["muon_b"] = o_.muon_b;
  c["muon_c"] = o_.muon_c;
  c["adam_lr_ratio"] = o_.adam_lr_ratio;
  c["momentum"] = o_.momentum;
  c["ns_steps"] = o_.ns_steps;
  c["nesterov"] = o_.nesterov;
  c["exclude_embeddings"] = o_.exclude_embeddings;
  c["adam_weight_decay"] = detail::optional_json(o_.adam_weight_decay);
  c["rms_rate"] = detail::optional_json(o_.rms_rate);
  return c;
}

Muon Muon::from_config(const nlohmann::json& c) {
  const std::string cls = "Muon";
  MuonOptions o;
  set_base_options(o, base_options_from_config(c, cls,
                                               {"adam_beta_1", "adam_beta_2", "adam_weight_decay", "epsilon",
                                                "exclude_layers", "exclude_embeddings", "muon_a", "muon_b", "muon_c",
                                                "adam_lr_ratio", "momentum", "ns_steps", "nesterov", "rms_rate"},
                                               base_options(o)));
  o.adam_beta_1 = detail::config_number(c, "adam_beta_1", o.adam_beta_1, cls);
  o.adam_beta_2 = detail::config_number(c, "adam_beta_2", o.adam_beta_2, cls);
  // A present key wins, null included (null turns the decay or the scaling off).
  if (c.contains("adam_weight_decay")) o.adam_weight_decay = detail::config_optional(c, "adam_weight_decay", cls);
  if (c.contains("rms_rate")) o.rms_rate = detail::config_optional(c, "rms_rate", cls);
  o.epsilon = detail::config_number(c, "epsilon", o.epsilon, cls);
  if (c.contains("exclude_layers") && !c["exclude_layers"].is_null()) {  // Keras: exclude_layers or []
    const nlohmann::json& layers = c["exclude_layers"];
    EMBER_CHECK(layers.is_array(), InvalidArgument)
        << cls << ".from_config: 'exclude_layers' must be a list of strings, got " << layers.dump();
    for (const nlohmann::json& l : layers) {
      EMBER_CHECK(l.is_string(), InvalidArgument)
          << cls << ".from_config: 'exclude_layers' must be a list of strings, got " << layers.dump();
      o.exclude_layers.push_back(l.get<std::string>());
    }
  }
  o.exclude_embeddings = detail::config_bool(c, "exclude_embeddings", o.exclude_embeddings, cls);
  o.muon_a = detail::config_number(c, "muon_a", o.muon_a, cls);
  o.muon_b = detail::config_number(c, "muon_b", o.muon_b, cls);
  o.muon_c = detail::config_number(c, "muon_c", o.muon_c, cls);
  o.adam_lr_ratio = detail::config_number(c, "adam_lr_ratio", o.adam_lr_ratio, cls);
  o.momentum = detail::config_number(c, "momentum", o.momentum, cls);
  o.ns_steps = detail::config_int(c, "ns_steps", o.ns_steps, cls);
  o.nesterov = detail::config_bool(c, "nesterov", o.nesterov, cls);
  return Muon(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Muon);

}  // namespace ember::optimizers
