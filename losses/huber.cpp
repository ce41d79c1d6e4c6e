// Huber (keras/src/losses/losses.py huber).
#include "losses/huber.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kHuberName = "huber_loss";
[[maybe_unused]] const bool huber_registered = detail::register_loss("Huber", &Huber::from_config, {"huber"});
}  // namespace

Huber::Huber(HuberOptions options)
    : Loss(detail::name_or(options.name, kHuberName), options.reduction, "Huber"), delta_(options.delta) {}

Tensor Huber::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  // delta is a float32 tensor in Keras, so 0.5 * delta^2 is rounded in float32.
  const float d = static_cast<float>(delta_);
  const float half_d2 = 0.5f * (d * d);
  const Tensor error = p - t;
  const Tensor abs_error = ops::abs(error);
  const Tensor quadratic = ops::square(error) * 0.5;
  const Tensor linear = abs_error * static_cast<double>(d) - static_cast<double>(half_d2);
  return ops::reduce_mean(ops::where(ops::less_equal(abs_error, ops::f32(d)), quadratic, linear), -1);
}

nlohmann::json Huber::get_config() const {
  nlohmann::json c = Loss::get_config();
  c["delta"] = delta_;
  return c;
}

LossPtr Huber::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "Huber", kHuberName, {"delta"});
  return std::make_shared<Huber>(HuberOptions{.delta = detail::config_double(config, "delta", 1.0, "Huber"),
                                              .reduction = base.reduction,
                                              .name = base.name});
}

}  // namespace ember::losses
