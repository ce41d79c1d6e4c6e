#include "optimizers/adafactor.h"

#include "framework/ops/array.h"
#include "framework/ops/creation.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "optimizers/config_util.h"
#include "optimizers/registry.h"
#include "optimizers/scalar.h"

namespace ember::optimizers {

using detail::Scalar;

namespace {

// Keras's _rms: sqrt(mean(x^2)), a 0-d tensor.
Tensor rms(const Tensor& x) { return ops::sqrt(ops::reduce_mean(ops::square(x))); }

// Keras's var.name: the last component of the variable's path ("dense/kernel" -> "kernel").
std::string own_name(const Variable& v) { return detail::keras_variable_name(v.name()); }

}  // namespace

Adafactor::Adafactor(AdafactorOptions o)
    : Optimizer("Adafactor", base_options(o)),
      beta_2_decay_(o.beta_2_decay),
      epsilon_1_(o.epsilon_1),
      epsilon_2_(o.epsilon_2),
      clip_threshold_(o.clip_threshold),
      relative_step_(o.relative_step) {}

void Adafactor::build_slots(const std::vector<Variable>& vars) {
  for (const Variable& var : vars) {
    const Shape& shape = var.shape();
    if (shape.rank() < 2) {
      // Keras: backend.Variable(0, name=var.name, trainable=False), tracked like the real slots.
      r_.push_back(add_variable(Tensor::scalar<int32_t>(0), own_name(var)));
      c_.push_back(add_variable(Tensor::scalar<int32_t>(0), own_name(var)));
    } else {
      // The last two dimensions are factored: r drops the last, c the second last.
      std::vector<int64_t> r_dims = shape.dims(), c_dims = shape.dims();
      r_dims.pop_back();
      c_dims.erase(c_dims.end() - 2);
      r_.push_back(add_variable(ops::zeros(Shape(r_dims), var.dtype()).to(var.device()), own_name(var)));
      c_.push_back(add_variable(ops::zeros(Shape(c_dims), var.dtype()).to(var.device()), own_name(var)));
    }
    v_.push_back(add_variable_from_reference(var, "velocity"));
  }
}

void Adafactor::update_step(const Tensor& g, Variable& var, size_t index, double learning_rate) {
  const DType dt = var.dtype();
  Scalar lr(learning_rate, dt);
  const Scalar epsilon_2 = Scalar::cast(epsilon_2_, dt);
  const Scalar local_step(static_cast<double>(current_step() + 1), dt);
  const Scalar inverse_sqrt_step = 1.0 / sqrt(local_step);
  // Keras tests `not callable(self._learning_rate)`: a schedule is callable, a fixed rate's variable is not.
  if (!learning_rate_schedule() && relative_step_) lr = minimum(lr, inverse_sqrt_step);

  const Scalar rho_t = minimum(lr, inverse_sqrt_step);
  const Tensor alpha_t = ops::maximum(Tensor::scalar_of(epsilon_2.value(), dt, Device::cpu()), rms(var.value())) *
                         rho_t.value();
  const Tensor regulated_grad_square = ops::square(g) + epsilon_1_;
  const Scalar beta_2_t = 1.0 - pow(local_step, Scalar(beta_2_decay_, dt));
  const double keep = beta_2_t.value(), take = (1.0 - beta_2_t).value();

  Variable& v = v_[index];
  if (var.shape().rank() >= 2) {
    Variable& r = r_[index];
    Variable& c = c_[index];
    r.assign(r.value() * keep + ops::reduce_mean(regulated_grad_square, -1) * take);
    c.assign(c.value() * keep + ops::reduce_mean(regulated_grad_square, -2) * take);
    v.assign(ops::expand_dims(r.value() / ops::reduce_mean(r.value(), -1, true), -1) *
             ops::expand_dims(c.value(), -2));
  } else {
    v.assign(v.value() * keep + regulated_grad_square * take);
  }

  const Tensor u_t = g / ops::sqrt(v.value());
  const Tensor one = Tensor::scalar_of(1.0, dt, Device::cpu());
  const Tensor u_t_hat = u_t / ops::maximum(one, rms(u_t) / clip_threshold_);
  var.assign(var.value() - alpha_t * u_t_hat);
}

nlohmann::json Adafactor::get_config() const {
  nlohmann::json c = Optimizer::get_config();
  c["beta_2_decay"] = beta_2_decay_;
  c["epsilon_1"] = epsilon_1_;
  c["epsilon_2"] = epsilon_2_;
  c["clip_threshold"] = clip_threshold_;
  c["relative_step"] = relative_step_;
  return c;
}

Adafactor Adafactor::from_config(const nlohmann::json& c) {
  const std::string cls = "Adafactor";
  AdafactorOptions o;
  set_base_options(o, base_options_from_config(
                          c, cls, {"beta_2_decay", "epsilon_1", "epsilon_2", "clip_threshold", "relative_step"},
                          base_options(o)));
  o.beta_2_decay = detail::config_number(c, "beta_2_decay", -0.8, cls);
  o.epsilon_1 = detail::config_number(c, "epsilon_1", 1e-30, cls);
  o.epsilon_2 = detail::config_number(c, "epsilon_2", 1e-3, cls);
  o.clip_threshold = detail::config_number(c, "clip_threshold", 1.0, cls);
  o.relative_step = detail::config_bool(c, "relative_step", true, cls);
  return Adafactor(std::move(o));
}

EMBER_REGISTER_OPTIMIZER(Adafactor);

}  // namespace ember::optimizers
