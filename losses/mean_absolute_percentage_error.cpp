// MeanAbsolutePercentageError (keras/src/losses/losses.py mean_absolute_percentage_error).
#include "losses/mean_absolute_percentage_error.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kMeanAbsolutePercentageErrorName = "mean_absolute_percentage_error";
[[maybe_unused]] const bool mean_absolute_percentage_error_registered = detail::register_loss("MeanAbsolutePercentageError",
                                              &MeanAbsolutePercentageError::from_config,
                                              {"mean_absolute_percentage_error", "mape", "MAPE"});
}  // namespace

MeanAbsolutePercentageError::MeanAbsolutePercentageError(LossOptions options)
    : Loss(detail::name_or(options.name, kMeanAbsolutePercentageErrorName), options.reduction, "MeanAbsolutePercentageError") {}

Tensor MeanAbsolutePercentageError::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const Tensor diff = ops::abs((t - p) / ops::maximum(ops::abs(t), ops::f32(1e-7)));
  return ops::reduce_mean(diff, -1) * 100.0;  // Keras scales after the mean
}

LossPtr MeanAbsolutePercentageError::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "MeanAbsolutePercentageError", kMeanAbsolutePercentageErrorName);
  return std::make_shared<MeanAbsolutePercentageError>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
