// LogCosh (keras/src/losses/losses.py log_cosh).
#include "losses/log_cosh.h"

#include <cmath>

#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/tensor_helpers.h"
#include "losses/loss_utils.h"

namespace ember::losses {

namespace {
constexpr const char* kLogCoshName = "log_cosh";
[[maybe_unused]] const bool log_cosh_registered = detail::register_loss("LogCosh", &LogCosh::from_config, {"log_cosh", "logcosh"});
}  // namespace

LogCosh::LogCosh(LossOptions options) : Loss(detail::name_or(options.name, kLogCoshName), options.reduction, "LogCosh") {}

Tensor LogCosh::call(const Tensor& y_true, const Tensor& y_pred) const {
  auto [t, p] = detail::prepare_same_shape(class_name(), y_true, y_pred);
  const Tensor x = p - t;
  // log(cosh(x)) = x + softplus(-2x) - log(2): no overflow of cosh for large |x|.
  return ops::reduce_mean((x + ops::softplus(x * -2.0)) - ops::f32(std::log(2.0)), -1);
}

LossPtr LogCosh::from_config(const nlohmann::json& config) {
  auto base = detail::read_base_config(config, "LogCosh", kLogCoshName);
  return std::make_shared<LogCosh>(LossOptions{.reduction = base.reduction, .name = base.name});
}

}  // namespace ember::losses
