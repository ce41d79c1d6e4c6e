// MeanSquaredLogarithmicError (keras/src/losses/losses.py mean_squared_logarithmic_error).
#include "losses/mean_squared_logarithmic_error.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kMeanSquaredLogarithmicErrorName = "mean_squared_logarithmic_error";
[[maybe_unused]] const bool mean_squared_logarithmic_error_registered =
    detail::register_loss("MeanSquaredLogarithmicError", &MeanSquaredLogarithmicError::from_config,
                          {"mean_squared_logarithmic_error", "msle", "MSLE"});
}  // namespace

MeanSquaredLogarithmicError::MeanSquaredLogarithmicError(LossOptions options)
    : Loss(detail::name_or(options.name, kMeanSquaredLogarithmicErrorName), options.reduction,
           "MeanSquaredLogarithmicError") {}

Tensor MeanSquaredLogarithmicError::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  // Keras floors both sides at epsilon (not at 0), so negative values count as 1e-7.
  const Tensor epsilon = ops::f32(1e-7);
  const Tensor first_log = ops::log(ops::maximum(p, epsilon) + 1.0);
  const Tensor second_log = ops::log(ops::maximum(t, epsilon) + 1.0);
  return ops::reduce_mean(ops::square(first_log - second_log), -1);
}

LossPtr MeanSquaredLogarithmicError::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "MeanSquaredLogarithmicError", kMeanSquaredLogarithmicErrorName);
  return std::make_shared<MeanSquaredLogarithmicError>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
