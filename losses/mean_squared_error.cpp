// MeanSquaredError (keras/src/losses/losses.py mean_squared_error).
#include "losses/mean_squared_error.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kMeanSquaredErrorName = "mean_squared_error";
[[maybe_unused]] const bool mean_squared_error_registered = detail::register_loss("MeanSquaredError", &MeanSquaredError::from_config,
                                              {"mean_squared_error", "mse", "MSE"});
}  // namespace

MeanSquaredError::MeanSquaredError(LossOptions options)
    : Loss(detail::name_or(options.name, kMeanSquaredErrorName), options.reduction, "MeanSquaredError") {}

Tensor MeanSquaredError::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  return ops::reduce_mean(ops::square(t - p), -1);
}

LossPtr MeanSquaredError::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "MeanSquaredError", kMeanSquaredErrorName);
  return std::make_shared<MeanSquaredError>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
