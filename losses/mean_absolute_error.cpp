// MeanAbsoluteError (keras/src/losses/losses.py mean_absolute_error).
#include "losses/mean_absolute_error.h"

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kMeanAbsoluteErrorName = "mean_absolute_error";
[[maybe_unused]] const bool mean_absolute_error_registered = detail::register_loss("MeanAbsoluteError", &MeanAbsoluteError::from_config,
                                              {"mean_absolute_error", "mae", "MAE"});
}  // namespace

MeanAbsoluteError::MeanAbsoluteError(LossOptions options)
    : Loss(detail::name_or(options.name, kMeanAbsoluteErrorName), options.reduction, "MeanAbsoluteError") {}

Tensor MeanAbsoluteError::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  return ops::reduce_mean(ops::abs(t - p), -1);
}

LossPtr MeanAbsoluteError::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "MeanAbsoluteError", kMeanAbsoluteErrorName);
  return std::make_shared<MeanAbsoluteError>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
